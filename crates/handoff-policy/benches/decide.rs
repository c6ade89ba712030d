//! Permission decision latency: 1,000 rules × 10,000 requests (compound commands split into
//! parts, paths), with a 10-rule stack judged in the same run as the baseline.
#![allow(missing_docs)]

use std::time::Instant;

use handoff_policy::{Layer, PermissionAction, PermissionRequest, PermissionRule, RuleStack};

fn rules(n: usize) -> Vec<PermissionRule> {
    let mut rules = vec![PermissionRule::new("*", "*", PermissionAction::Allow)];
    let actions = [
        PermissionAction::Allow,
        PermissionAction::Ask,
        PermissionAction::Deny,
    ];
    for i in 1..n {
        let action = actions[i % 3];
        rules.push(match i % 4 {
            0 => PermissionRule::new("bash", &format!("tool{i} *"), action),
            1 => PermissionRule::new("edit", &format!("src/mod{i}/*.rs"), action),
            2 => PermissionRule::new("read", &format!("*.secret{i}"), action),
            _ => PermissionRule::new("bash", &format!("git sub{i} *"), action),
        });
    }
    rules
}

fn requests(n: usize) -> Vec<(&'static str, Vec<String>)> {
    (0..n)
        .map(|i| match i % 3 {
            0 => (
                "bash",
                vec![format!(
                    "git sub{} --x && tool{} a | grep b",
                    i % 997,
                    i % 991
                )],
            ),
            1 => ("edit", vec![format!("/work/t/src/mod{}/lib.rs", i % 1000)]),
            _ => (
                "read",
                vec![format!("a/b/c.secret{}", i % 1000), "README.md".to_owned()],
            ),
        })
        .collect()
}

fn measure(stack: &RuleStack, requests: &[(&'static str, Vec<String>)]) -> (f64, f64) {
    let mut times: Vec<f64> = requests
        .iter()
        .map(|(permission, patterns)| {
            let started = Instant::now();
            let verdict = stack.evaluate(
                &PermissionRequest {
                    permission,
                    patterns,
                    agent: Some("agent"),
                    cwd: Some("/work/t"),
                    headless: false,
                },
                &[],
            );
            std::hint::black_box(verdict);
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[times.len() * 99 / 100])
}

fn main() {
    let requests = requests(10_000);
    let small = RuleStack::new().with_layer(Layer::Global, &rules(10));
    let large = RuleStack::new().with_layer(Layer::Global, &rules(1_000));
    measure(&large, &requests[..500]); // warm-up (parser, caches)
    let (small_median, small_p99) = measure(&small, &requests);
    let (median, p99) = measure(&large, &requests);
    println!(
        "permission decisions, 10,000 requests (1/3 compound bash, 1/3 edit paths, 1/3 two read paths)"
    );
    println!("  10 rules:    median {small_median:8.2} µs   p99 {small_p99:8.2} µs");
    println!("  1,000 rules: median {median:8.2} µs   p99 {p99:8.2} µs");
    println!(
        "  ratio 1,000 / 10 rules (median): {:.1}×",
        median / small_median
    );
}
