//! Letta's own MCP client against the real binary: the MCP Python SDK 1.12.4 from Letta
//! 0.16.8's venv (`scripts/letta/up.sh` installs it in `tests/letta/venv`), driven the way
//! Letta drives it — a fresh session per tool call, ended with DELETE — must get every tool's
//! text without logging a parse error (SSE priming events) or a failed session termination.

use std::{path::PathBuf, process::Command};

use serde_json::Value;

use super::harness::{json_line, run_client, start};

/// The Python of Letta's venv; the test fails (never skips) without it.
fn letta_python() -> PathBuf {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/letta/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: install Letta's venv with `scripts/letta/up.sh`",
        python.display()
    );
    python
}

#[test]
fn letta_s_mcp_client_gets_every_text_and_logs_no_error() {
    let server = start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_COMPLETION_POLICY", "none"),
    ]);
    let agent = "agent-0d1a6f4e-52c1-4f43-9a4e-2f8d0c6b7a15";
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/suite/letta_sdk_client.py");
    let mut command = Command::new(letta_python());
    command.arg(script).args([server.url.as_str(), agent, "3"]);
    let output = run_client(command, "Letta's MCP client pattern");
    let report = json_line(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);

    assert_eq!(report["sdk"], "1.12.4", "the SDK Letta 0.16.8 installs");
    assert_eq!(report["protocol"], "2025-06-18");
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 7, "{report}");
    let task = report["task_id"].as_str().unwrap();
    for call in calls {
        assert_ne!(call["is_error"], true, "{call}");
        // The words Letta hands its model, and the structured result it drops.
        let text = call["text"].as_str().unwrap();
        let structured = &call["structured"];
        match call["tool"].as_str().unwrap() {
            "ping" => {
                assert_eq!(structured["agent_id"], agent, "{call}");
                assert!(text.contains(&format!("You are agent {agent}.")), "{call}");
            }
            _ => {
                assert_eq!(structured["task_id"], task, "{call}");
                assert!(text.starts_with(&format!("Task {task} ")), "{call}");
            }
        }
    }
    for noise in ["Error parsing SSE message", "Session termination failed"] {
        assert!(!stderr.contains(noise), "{noise}:\n{stderr}");
    }
    assert_eq!(report["logged"], Value::Array(Vec::new()), "{stderr}");
}
