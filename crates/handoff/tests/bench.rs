//! `handoff bench --smoke`: proves the benchmark still runs (figures are not judged here). A
//! test binary of its own, so its load never overlaps the end-to-end tests' timing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_handoff");

#[test]
fn the_benchmark_runs_end_to_end() {
    let mut child = Command::new(BIN)
        .args(["bench", "--smoke"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("handoff bench --smoke did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
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
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    assert!(!text.contains("first error"), "requests failed:\n{text}");
}
