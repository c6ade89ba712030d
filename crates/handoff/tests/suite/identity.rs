//! Who calls is decided at the edge: agent tokens, a gateway acting for several agents, an
//! operator, observers and header-only identity on an open server — through the official
//! Python MCP SDK against the real binary.

use serde_json::{Value, json};

use super::{
    harness::{Server, start},
    mcp::{calls_with, err, ok},
};

const A: &str = "token-of-agent-a-000000001";
const B: &str = "token-of-agent-b-000000002";
const GATEWAY: &str = "token-of-the-gateway-0003";
const OPERATOR: &str = "token-of-the-operator-004";

fn server() -> Server {
    let tokens = json!([
        {"token": A, "role": "agent", "agent_id": "agent-a"},
        {"token": B, "role": "agent", "agent_id": "agent-b"},
        {"token": GATEWAY, "role": "gateway"},
        {"token": OPERATOR, "role": "operator", "agent_id": "ops"},
    ])
    .to_string();
    // Tasks wait for their release file, so they can be read and steered while they run.
    start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_COMMAND_MESSAGES_VIA_STDIN", "true"),
        ("HANDOFF_CANCEL_GRACE_MS", "500"),
        ("HANDOFF_AUTH_TOKENS", Box::leak(tokens.into_boxed_str())),
    ])
}

fn one(server: &Server, header: &str, token: &str, name: &str, arguments: Value) -> Value {
    calls_with(
        server,
        header,
        Some(token),
        json!([{"name": name, "arguments": arguments}]),
    )
    .remove(0)
}

/// Submits a task that runs until `release` exists.
fn submit(server: &Server, header: &str, token: &str, observers: &[&str]) -> String {
    let script = "echo started; while [ ! -f release ]; do sleep 0.1; done; echo done";
    let submitted = one(
        server,
        header,
        token,
        "execute_task",
        json!({"task_description": script, "observers": observers}),
    );
    ok(&submitted)["task_id"].as_str().unwrap().to_owned()
}

/// Every way of reaching task `id` as a stranger fails as "not found", and changes nothing.
fn cannot_reach(server: &Server, header: &str, token: &str, id: &str, argument: Option<&str>) {
    let with = |mut args: Value| {
        if let Some(agent) = argument {
            args["agent_id"] = json!(agent);
        }
        args
    };
    let attempts = [
        ("get_task_status", with(json!({"task_id": id}))),
        ("get_task_history", with(json!({"task_id": id}))),
        ("get_task_files", with(json!({"task_id": id}))),
        (
            "read_task_file",
            with(json!({"task_id": id, "path": "release"})),
        ),
        (
            "send_task_message",
            with(json!({"task_id": id, "message": "stop"})),
        ),
        (
            "send_task_control",
            with(json!({"task_id": id, "control": "cancel"})),
        ),
    ];
    let batch: Vec<Value> = attempts
        .iter()
        .map(|(tool, args)| json!({"name": tool, "arguments": args}))
        .collect();
    let results = calls_with(server, header, Some(token), Value::Array(batch));
    for ((tool, _), result) in attempts.iter().zip(&results) {
        let error = err(result);
        let code = error["code"].as_str().unwrap_or_default().to_owned();
        assert!(
            code == "NOT_FOUND" || code == "INVALID_ARGUMENTS",
            "{tool} as {header} reached {id}: {error}"
        );
    }
}

fn status(server: &Server, header: &str, token: &str, id: &str) -> String {
    let reply = one(
        server,
        header,
        token,
        "get_task_status",
        json!({"task_id": id}),
    );
    ok(&reply)["status"].as_str().unwrap().to_owned()
}

#[test]
fn tokens_keep_agents_apart_and_operators_see_all() {
    let server = server();
    let task_a = submit(&server, "-", A, &["agent-c"]);
    let task_b = submit(&server, "-", B, &[]);

    // Agent A's token reaches B's task by no argument and no header.
    cannot_reach(&server, "-", A, &task_b, None);
    cannot_reach(&server, "-", A, &task_b, Some("agent-b"));
    // (A header naming another agent is refused at the edge: handoff-server's tests.)
    assert_eq!(status(&server, "agent-a", A, &task_a), "running");

    // A gateway acting for A and for B keeps them apart.
    assert_eq!(status(&server, "agent-a", GATEWAY, &task_a), "running");
    cannot_reach(&server, "agent-a", GATEWAY, &task_b, None);
    cannot_reach(&server, "agent-a", GATEWAY, &task_b, Some("agent-b"));
    assert_eq!(status(&server, "agent-b", GATEWAY, &task_b), "running");
    cannot_reach(&server, "agent-b", GATEWAY, &task_a, None);

    // An observer reads the task but cannot steer it.
    assert_eq!(status(&server, "agent-c", GATEWAY, &task_a), "running");
    let history = one(
        &server,
        "agent-c",
        GATEWAY,
        "get_task_history",
        json!({"task_id": task_a}),
    );
    assert!(ok(&history)["total_events"].as_u64().unwrap() > 0);
    let steer = one(
        &server,
        "agent-c",
        GATEWAY,
        "send_task_control",
        json!({"task_id": task_a, "control": "cancel"}),
    );
    assert_eq!(err(&steer)["code"], "DENIED", "{steer}");
    let listed = one(&server, "agent-c", GATEWAY, "list_tasks", json!({}));
    assert_eq!(ok(&listed)["tasks"].as_array().unwrap().len(), 0);

    // The operator sees both and steers any.
    let all = one(&server, "-", OPERATOR, "list_tasks", json!({}));
    let ids: Vec<&str> = ok(&all)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["task_id"].as_str())
        .collect();
    assert!(
        ids.contains(&task_a.as_str()) && ids.contains(&task_b.as_str()),
        "{all}"
    );
    let cancelled = one(
        &server,
        "-",
        OPERATOR,
        "send_task_control",
        json!({"task_id": task_b, "control": "cancel"}),
    );
    assert_eq!(ok(&cancelled)["status"], "cancelled", "{cancelled}");
    let history = one(
        &server,
        "-",
        OPERATOR,
        "get_task_history",
        json!({"task_id": task_b}),
    );
    let by_ops = ok(&history)["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "control" && e["data"]["by"] == "ops");
    assert!(by_ops, "{history}");
    // A task A's token still owns, untouched by the others.
    assert_eq!(status(&server, "-", A, &task_a), "running");
    let control = one(
        &server,
        "-",
        A,
        "send_task_control",
        json!({"task_id": task_a, "control": "cancel"}),
    );
    assert_eq!(ok(&control)["status"], "cancelled", "{control}");
}

#[test]
fn header_identity_on_an_open_server_works_as_before() {
    let server = start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
    ]);
    let results = super::mcp::calls(
        &server,
        "agent-h",
        json!([
            {"name": "execute_task", "arguments": {"task_description": "echo hi", "sync": true}},
            {"name": "list_tasks", "arguments": {}},
            {"name": "ping", "arguments": {"agent_id": "agent-other"}},
        ]),
    );
    assert_eq!(ok(&results[0])["status"], "completed", "{}", results[0]);
    assert_eq!(ok(&results[1])["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(err(&results[2])["pointer"], "/agent_id");
}
