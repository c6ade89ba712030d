//! `handoff bench --smoke`: proves the benchmark still runs (figures are not judged here). A
//! test binary of its own, so its load never overlaps the end-to-end tests' timing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    process::{Command, Stdio},
    sync::mpsc,
    time::Duration,
};

const BIN: &str = env!("CARGO_BIN_EXE_handoff");

#[test]
fn the_benchmark_runs_end_to_end() {
    let child = Command::new(BIN)
        .args(["bench", "--smoke"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    // The exit itself is waited for (on a thread that also drains both pipes); the limit is
    // only a safety net.
    let (tx, exited) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let Ok(output) = exited.recv_timeout(Duration::from_secs(120)) else {
        // Not reaped yet (the waiting thread would have sent), so the pid is still the bench's.
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        panic!("handoff bench --smoke did not finish within 120 s");
    };
    let output = output.unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "bench failed: {}\n{}",
        text,
        String::from_utf8_lossy(&output.stderr)
    );
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
