//! `handoff bench --smoke` and `handoff bench --gateway --smoke`: prove the benchmarks still run
//! (figures are not judged here). A test binary of its own, so its load never overlaps the
//! end-to-end tests' timing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    process::{Command, Stdio},
    sync::{Mutex, mpsc},
    time::Duration,
};

const BIN: &str = env!("CARGO_BIN_EXE_handoff");

/// One benchmark at a time: each is a load of its own on a small machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `handoff bench` with `args` to its end (at most 240 s); its stdout, after asserting
/// that it succeeded.
fn bench(args: &[&str]) -> String {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let child = Command::new(BIN)
        .arg("bench")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    // The exit itself is waited for (on a thread that also drains both pipes); the limit is
    // only a safety net.
    let (tx, exited) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let Ok(output) = exited.recv_timeout(Duration::from_secs(240)) else {
        // Not reaped yet (the waiting thread would have sent), so the pid is still the bench's.
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        panic!("handoff bench {args:?} did not finish within 240 s");
    };
    let output = output.unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "bench {args:?} failed: {}\n{}",
        text,
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

#[test]
fn the_benchmark_runs_end_to_end() {
    let text = bench(&["--smoke"]);
    for expected in [
        "p50/floor",
        "ping             floor",
        "get_task_status  stateless",
        "execute_task     session",
        "soak:",
        "abandoned sessions:",
        "cold start to a served request",
        "letta pattern (a fresh session per tool call, 5 requests), server CPU: N=1 ",
        "server CPU per ping vs the floor (worst)",
        "server CPU per tools/list vs the floor (worst)",
        "server CPU per get_task_status vs the floor (worst)",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    assert!(!text.contains("first error"), "requests failed:\n{text}");
    // The whole-unit patterns, per unit and per request, against Handoff and the floor, at
    // every concurrency level of the smoke run.
    // tools/list and get_task_status beside a floor that sends the same answers; the
    // stateless rows beside a floor sent the same stateless requests.
    for clients in ["1", "4"] {
        for name in ["tools/list", "get_task_status"] {
            floor_row(&text, name, "floor", clients);
            handoff_row(&text, name, "session", clients);
        }
        for name in ["ping", "get_task_status"] {
            floor_row(&text, name, "floor-sl", clients);
            handoff_row(&text, name, "stateless", clients);
        }
    }
    for name in [
        "letta/call",
        "letta/req",
        "letta-noGET/call",
        "letta-noGET/req",
        "handshake/unit",
        "handshake/req",
    ] {
        for clients in ["1", "4"] {
            floor_row(&text, name, "floor", clients);
            handoff_row(&text, name, "session", clients);
        }
    }
}

/// The OpenCode the gateway row's agent baseline runs: the interop tests' install, which the
/// test needs (it fails without it, never skips).
fn opencode() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/interop/agents/node_modules/.bin/opencode");
    assert!(
        path.is_file(),
        "no OpenCode at {} (npm install in tests/interop/agents)",
        path.display()
    );
    path.display().to_string()
}

#[test]
fn the_gateway_row_runs_every_call_through_to_the_whole_answer() {
    let opencode = opencode();
    let text = bench(&["--gateway", "--smoke", "--agent-baseline", &opencode]);
    assert!(!text.contains("first error"), "calls failed:\n{text}");
    // Each row: route, N, calls, errors, calls/s, p50, p95, handoff µs, bench µs. Every call
    // of the step answered 200 with every frame of the scripted answer (the bench counts a
    // call only then), none failed: the step's 32 calls, and a provider-paced step's 4 per
    // client.
    for (route, calls) in [
        ("direct", ["32", "32"]),
        ("gateway", ["32", "32"]),
        ("direct~", ["4", "64"]),
        ("gateway~", ["4", "64"]),
    ] {
        for (clients, calls) in ["1", "16"].into_iter().zip(calls) {
            let row = text
                .lines()
                .map(|line| line.split_whitespace().collect::<Vec<_>>())
                .find(|c| c.len() == 9 && c[0] == route && c[1] == clients)
                .unwrap_or_else(|| panic!("no `{route} {clients}` row in:\n{text}"));
            assert_eq!((row[2], row[3]), (calls, "0"), "{row:?}");
            assert!(row[5].parse::<f64>().unwrap() > 0.0, "no latency: {row:?}");
        }
    }
    for clients in ["1", "16"] {
        for expected in [
            format!("gateway: CPU per call / the bench's client+model, N={clients}"),
            format!("gateway: CPU per call / the agent's own (opencode), N={clients}"),
        ] {
            assert!(text.contains(&expected), "missing `{expected}` in:\n{text}");
        }
        // The added latency, saturated and provider-paced: a figure in ms, then its target.
        for label in [
            format!("gateway: added p50 per call, N={clients} "),
            format!("gateway: added p50 per call, provider-paced (TTFT 200 ms), N={clients} "),
        ] {
            let line = text
                .lines()
                .find(|l| l.starts_with(&label))
                .unwrap_or_else(|| panic!("missing `{label}` in:\n{text}"));
            let figure: Vec<&str> = line[label.len()..].split_whitespace().take(3).collect();
            assert!(
                figure.len() == 3
                    && figure[0].parse::<f64>().is_ok()
                    && figure[1..] == ["ms", "target"],
                "no figure: {line}"
            );
        }
    }
    // The agent baseline, measured: OpenCode's own CPU per model call (2 and 22 tool turns,
    // also in a smoke run, so 20 calls apart).
    let agent = text
        .lines()
        .find_map(|l| l.strip_prefix("agent: opencode run ("))
        .unwrap_or_else(|| panic!("no agent line in:\n{text}"));
    let per_call: f64 = agent
        .split_once("CPU per model call ")
        .and_then(|(_, rest)| rest.split_once(" ms"))
        .and_then(|(ms, _)| ms.parse().ok())
        .unwrap_or_else(|| panic!("no figure in the agent line: {agent}"));
    assert!(per_call > 0.0, "{agent}");
    assert!(
        agent.contains("marginal over 20 calls: 22 vs 2 tool turns"),
        "{agent}"
    );
    // The gateway's own count: every call it forwarded was answered 2xx.
    let counted = text
        .lines()
        .find_map(|l| l.strip_prefix("gateway calls: the bench made "))
        .unwrap_or_else(|| panic!("no count in:\n{text}"));
    let (made, counted) = counted
        .strip_suffix(" answered 2xx")
        .and_then(|c| c.split_once(", handoff counted "))
        .unwrap_or_else(|| panic!("count: {counted}"));
    assert_eq!(made, counted, "{text}");
}

/// The row `name` `era` `clients`, split into its columns: op, era, N, req/s, p50, p90, p99,
/// max, errors, cpu µs, RSS MB, p50/floor, rps/floor, cpu/floor.
fn columns<'a>(text: &'a str, name: &str, era: &str, clients: &str) -> Vec<&'a str> {
    let columns = text
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|c| c.len() == 14 && c[0] == name && c[1] == era && c[2] == clients);
    columns.unwrap_or_else(|| panic!("no `{name} {era} {clients}` row in:\n{text}"))
}

/// Asserts the figures every row has: work done, no errors, a CPU figure.
fn assert_figures(columns: &[&str]) {
    let number = |i: usize| -> f64 {
        columns[i]
            .parse()
            .unwrap_or_else(|_| panic!("column {i} is not a number: {columns:?}"))
    };
    assert!(number(3) > 0.0, "nothing done: {columns:?}");
    assert!(number(4) > 0.0, "no latency: {columns:?}");
    assert_eq!(columns[8], "0", "errors: {columns:?}");
    assert!(number(9) >= 0.0, "no CPU figure: {columns:?}");
}

fn floor_row(text: &str, name: &str, era: &str, clients: &str) {
    let columns = columns(text, name, era, clients);
    assert_figures(&columns);
    assert_eq!(&columns[11..], ["-", "-", "-"], "a floor row has no ratios");
}

fn handoff_row(text: &str, name: &str, era: &str, clients: &str) {
    let columns = columns(text, name, era, clients);
    assert_figures(&columns);
    let ratio = |i: usize| {
        columns[i]
            .strip_suffix('x')
            .and_then(|r| r.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("column {i} is not a ratio: {columns:?}"))
    };
    assert!(ratio(11) >= 0.0 && ratio(12) >= 0.0, "ratios: {columns:?}");
    // The floor's CPU over a short smoke step can read as 0 ticks: then there is no ratio.
    assert!(
        columns[13] == "-" || ratio(13) >= 0.0,
        "CPU ratio: {columns:?}"
    );
}
