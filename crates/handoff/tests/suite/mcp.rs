//! Talking to a running Handoff through the official Python MCP SDK, as tests need it.

use std::{
    process::{Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use serde_json::{Value, json};

use super::{
    harness::{Server, require, run_client},
    wait::{PATIENCE, Pace, poll},
};

/// Runs `calls` in one Python SDK session as `agent`; one result per call.
pub fn calls(server: &Server, agent: &str, calls: Value) -> Vec<Value> {
    calls_with(server, agent, None, calls)
}

/// Runs `calls` with the `x-agent-id` header `agent` (`-`: none) and an optional bearer token.
pub fn calls_with(server: &Server, agent: &str, token: Option<&str>, calls: Value) -> Vec<Value> {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, Ordering::SeqCst);
    let input = server
        .dir()
        .join(format!("calls-{}-{n}.json", std::process::id()));
    std::fs::write(&input, calls.to_string()).unwrap();
    let mut command = Command::new(require(".venv/bin/python"));
    command
        .arg(require("py_calls.py"))
        .args([&server.url, agent])
        .args(token)
        .stdin(Stdio::from(std::fs::File::open(&input).unwrap()));
    let output = run_client(command, "Python SDK tool calls");
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str::<Vec<Value>>(text.trim())
        .unwrap_or_else(|e| panic!("bad client output ({e}): {text}"))
}

pub fn call(server: &Server, agent: &str, name: &str, arguments: Value) -> Value {
    calls(
        server,
        agent,
        json!([{"name": name, "arguments": arguments}]),
    )
    .remove(0)
}

/// The structured result of a successful call.
pub fn ok(result: &Value) -> &Value {
    assert_eq!(result["is_error"], false, "{result}");
    &result["structured"]
}

/// The machine-readable body of a failed call (its `_meta`; the text is words for a model).
pub fn err(result: &Value) -> Value {
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Error "), "{result}");
    result["meta"]["handoff/error"].clone()
}

pub fn task_id(result: &Value) -> String {
    ok(result)["task_id"].as_str().unwrap().to_owned()
}

/// Polls `get_task_status` until the task is in one of `want` (a safety net of [`PATIENCE`]).
pub fn wait_status(server: &Server, agent: &str, id: &str, want: &[&str]) -> Value {
    wait_status_for(server, agent, id, want, PATIENCE)
}

/// Polls `get_task_status` until the task is in one of `want`, for at most `limit`.
pub fn wait_status_for(
    server: &Server,
    agent: &str,
    id: &str,
    want: &[&str],
    limit: Duration,
) -> Value {
    poll(limit, Pace::BACK_OFF, || {
        let status = call(server, agent, "get_task_status", json!({"task_id": id}));
        let status = ok(&status);
        let current = status["status"].as_str().unwrap();
        if want.contains(&current) {
            Ok(status.clone())
        } else {
            Err(current.to_owned())
        }
    })
    .unwrap_or_else(|current| {
        panic!(
            "{id} stuck in {current} (waiting for {want:?}): {:#}",
            history(server, agent, id)["events"]
        )
    })
}

pub fn history(server: &Server, agent: &str, id: &str) -> Value {
    let result = call(
        server,
        agent,
        "get_task_history",
        json!({"task_id": id, "events_limit": 1000}),
    );
    ok(&result).clone()
}
