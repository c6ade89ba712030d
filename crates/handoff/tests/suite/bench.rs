//! `handoff bench --smoke`: proves the benchmark still runs (figures are not judged here).

use std::process::Command;

use super::harness::{BIN, run_client};

#[test]
fn the_benchmark_runs_end_to_end() {
    let mut command = Command::new(BIN);
    command.args(["bench", "--smoke"]);
    let output = run_client(command, "handoff bench --smoke");
    let text = String::from_utf8_lossy(&output.stdout);
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
