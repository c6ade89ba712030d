//! Talking to a running Handoff as tests need it: batches of calls in one session of the
//! official Python MCP SDK ([`calls`]), single calls as one stateless 2026-07-28 request
//! ([`call`]) — what the CLI sends. A single call is most often a poll: a Python process per
//! look cost about a CPU-second, and the polls of a few waiting tests kept a 2-core machine
//! busy.

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

/// Calls `name` as `agent` (`-`: no `x-agent-id` header) in one stateless request; the
/// result in the shape [`calls`] gives.
pub fn call(server: &Server, agent: &str, name: &str, arguments: Value) -> Value {
    call_with(server, agent, None, name, arguments)
}

/// [`call`] with an optional bearer token.
pub fn call_with(
    server: &Server,
    agent: &str,
    token: Option<&str>,
    name: &str,
    arguments: Value,
) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "progressToken": 1,
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "handoff-tests", "version": "1"}
            }
        }
    });
    let text = STATELESS_CLIENT.with(|(runtime, http)| {
        let mut request = http
            .post(&server.url)
            .timeout(Duration::from_secs(120))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", STATELESS)
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .body(body.to_string());
        if agent != "-" {
            request = request.header("x-agent-id", agent);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        runtime.block_on(async {
            let response = request
                .send()
                .await
                .unwrap_or_else(|e| panic!("calling {name}: {e:?}"));
            let status = response.status();
            let text = response.text().await.unwrap_or_default();
            assert!(status.is_success(), "{name}: HTTP {status}: {text}");
            text
        })
    });
    stateless_result(name, &text)
}

/// The protocol revision of [`call`]'s requests.
const STATELESS: &str = "2026-07-28";

thread_local! {
    /// Each test thread's client for [`call`].
    static STATELESS_CLIENT: (tokio::runtime::Runtime, reqwest::Client) = {
        // reqwest is built with rustls on the ring provider only.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // A connection per call, as a client process per call had: a kept connection the
        // server closed while idle fails the next request.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        (runtime, http)
    };
}

/// A `tools/call` response body (JSON, or SSE with progress notifications first) in the
/// shape `py_calls.py` prints.
fn stateless_result(name: &str, text: &str) -> Value {
    let messages: Vec<Value> = match serde_json::from_str::<Value>(text.trim()) {
        Ok(message) => vec![message],
        Err(_) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    let progress: Vec<Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["message"].clone())
        .collect();
    let response = messages
        .iter()
        .rfind(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("{name}: no JSON-RPC response in {text}"));
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("{name}: a protocol error: {response}"));
    json!({
        "is_error": result["isError"] == true,
        "structured": result.get("structuredContent").cloned().unwrap_or(Value::Null),
        "text": result["content"][0]["text"].as_str().unwrap_or_default(),
        "meta": result.get("_meta").cloned().unwrap_or(Value::Null),
        "progress": progress,
    })
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
