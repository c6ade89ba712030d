//! Tool calls over the wire: validation errors, unknown tools, identity.

use serde_json::{Value, json};

use super::common::{Reply, call, start};

/// `{"error": body}`: the machine-readable body an error result carries in its `_meta`.
fn error_body(reply: &super::common::Reply) -> Value {
    let result = &reply.body["result"];
    assert_eq!(result["isError"], true, "{:?}", reply.body);
    json!({ "error": result["_meta"]["handoff/error"] })
}

#[tokio::test]
async fn ping_works_with_arguments_omitted() {
    let server = start(&[]).await;
    let session = server.initialize(&[]).await;
    let reply = server
        .session_call(
            &session,
            &[],
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ping"}}),
        )
        .await;
    assert_eq!(reply.body["result"]["structuredContent"]["ok"], true);
    assert_eq!(reply.body["result"]["isError"], false);
}

#[tokio::test]
async fn wrong_argument_type_names_the_field() {
    let server = start(&[]).await;
    let session = server.initialize(&[]).await;
    let reply = server
        .session_call(&session, &[], &call(1, "ping", json!({"message": 42})))
        .await;
    let body = error_body(&reply);
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(body["error"]["pointer"], "/message");
    assert!(reply.body["result"].get("structuredContent").is_none());
    let unknown = server
        .session_call(&session, &[], &call(2, "ping", json!({"mesage": "typo"})))
        .await;
    let body = error_body(&unknown);
    assert_eq!(body["error"]["pointer"], "/mesage");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown field")
    );
}

#[tokio::test]
async fn unknown_tool_is_a_clear_protocol_error() {
    let server = start(&[]).await;
    let session = server.initialize(&[]).await;
    let reply = server
        .session_call(&session, &[], &call(1, "no_such_tool", json!({})))
        .await;
    assert_eq!(reply.body["error"]["code"], -32602, "{:?}", reply.body);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
}

#[tokio::test]
async fn agent_header_fills_agent_id_and_an_argument_cannot_override_it() {
    let server = start(&[]).await;
    let header = [("x-agent-id", "agent-597b5756")];
    let session = server.initialize(&header).await;
    let filled = server
        .session_call(&session, &header, &call(1, "ping", json!({})))
        .await;
    assert_eq!(
        filled.body["result"]["structuredContent"]["agent_id"],
        "agent-597b5756"
    );
    let other = server
        .session_call(
            &session,
            &header,
            &call(2, "ping", json!({"agent_id": "agent-explicit"})),
        )
        .await;
    assert_eq!(error_body(&other)["error"]["pointer"], "/agent_id");
    let bad = server
        .session_call(
            &session,
            &header,
            &call(3, "ping", json!({"agent_id": "bad id"})),
        )
        .await;
    assert_eq!(error_body(&bad)["error"]["pointer"], "/agent_id");
    // Without any identity from the edge the argument names the caller (open server).
    let bare = server.initialize(&[]).await;
    let chosen = server
        .session_call(
            &bare,
            &[],
            &call(4, "ping", json!({"agent_id": "agent-explicit"})),
        )
        .await;
    assert_eq!(
        chosen.body["result"]["structuredContent"]["agent_id"],
        "agent-explicit"
    );
}

/// Tokens of three callers: two agents and a gateway acting for many.
const TOKENS: &str = r#"[
    {"token": "token-of-agent-a-0001", "role": "agent", "agent_id": "agent-a"},
    {"token": "token-of-agent-b-0002", "role": "agent", "agent_id": "agent-b"},
    {"token": "token-of-gateway-0003", "role": "gateway"}
]"#;

#[tokio::test]
async fn tokens_decide_who_calls() {
    let server = start(&[("HANDOFF_AUTH_TOKENS", TOKENS)]).await;
    let who = |reply: &Reply| reply.body["result"]["structuredContent"]["agent_id"].clone();
    let a = [("authorization", "Bearer token-of-agent-a-0001")];
    let session = server.initialize(&a).await;
    let own = server
        .session_call(&session, &a, &call(1, "ping", json!({})))
        .await;
    assert_eq!(who(&own), "agent-a");
    // An agent token cannot speak for another agent by argument…
    let by_argument = server
        .session_call(
            &session,
            &a,
            &call(2, "ping", json!({"agent_id": "agent-b"})),
        )
        .await;
    assert_eq!(error_body(&by_argument)["error"]["pointer"], "/agent_id");
    // …nor by header.
    let as_b = [
        ("authorization", "Bearer token-of-agent-a-0001"),
        ("x-agent-id", "agent-b"),
    ];
    let by_header = server
        .session_call(&session, &as_b, &call(3, "ping", json!({})))
        .await;
    assert_eq!(by_header.status, 403, "{:?}", by_header.body);
    // A gateway names the agent per call, and keeps them apart.
    for agent in ["agent-a", "agent-b"] {
        let gateway = [
            ("authorization", "Bearer token-of-gateway-0003"),
            ("x-agent-id", agent),
        ];
        let session = server.initialize(&gateway).await;
        let reply = server
            .session_call(&session, &gateway, &call(4, "ping", json!({})))
            .await;
        assert_eq!(who(&reply), agent);
        let other = server
            .session_call(
                &session,
                &gateway,
                &call(5, "ping", json!({"agent_id": "agent-c"})),
            )
            .await;
        assert_eq!(error_body(&other)["error"]["pointer"], "/agent_id");
    }
    // An unknown token is refused before anything else.
    let wrong = [("authorization", "Bearer token-of-nobody-0004")];
    let refused = server
        .session_call(&session, &wrong, &call(6, "ping", json!({})))
        .await;
    assert_eq!(refused.status, 401);
}

#[tokio::test]
async fn tools_list_carries_schemas_and_health_reports() {
    // A server that can run tasks: without its default executor its health is `degraded`.
    let server = start(&[
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_ARGV", r#"["true"]"#),
    ])
    .await;
    let session = server.initialize(&[]).await;
    let list = server
        .session_call(
            &session,
            &[],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    for tool in list.body["result"]["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false);
        assert_eq!(tool["outputSchema"]["type"], "object");
        assert!(tool["inputSchema"].get("$schema").is_none());
    }
    let health = server
        .session_call(&session, &[], &call(2, "health", json!({})))
        .await;
    let report = &health.body["result"]["structuredContent"];
    assert_eq!(report["status"], "ok", "{report}");
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        report["components"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "http")
    );
}

#[tokio::test]
async fn without_its_default_executor_the_server_is_not_ready_and_says_who_must_fix_it() {
    let server = start(&[
        ("HANDOFF_OPENCODE_BINARY", "/nonexistent/opencode"),
        ("HANDOFF_CLAUDE_BINARY", "/nonexistent/claude"),
    ])
    .await;
    let base = server.url.trim_end_matches("/mcp").to_owned();
    let ready = server
        .client
        .get(format!("{base}/ready"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    let report: Value = ready.json().await.unwrap();
    assert_eq!(report["status"], "degraded", "{report}");

    let agent = [("x-agent-id", "agent-a")];
    let session = server.initialize(&agent).await;
    let submit = json!({"task_description": "fix the failing test"});
    let reply = server
        .session_call(&session, &agent, &call(2, "execute_task", submit))
        .await;
    let body = error_body(&reply);
    // Not the caller's argument: it named no executor. The operator's to fix, and how.
    assert_eq!(body["error"]["code"], "UNSUPPORTED", "{body}");
    let text = reply.body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("default executor `opencode-acp` is not installed"),
        "{text}"
    );
    assert!(text.contains("npm install -g opencode-ai"), "{text}");
    assert!(text.contains("handoff doctor"), "{text}");
    assert!(!text.contains("/executor"), "{text}");
    // The fix agrees with the message: the operator's to do, no other way for the caller.
    assert!(
        text.contains("Fix: the server is not set up for this yet; its operator must fix it"),
        "{text}"
    );
    assert!(!text.contains("do it another way"), "{text}");

    // Naming a missing executor is the caller's argument, and says how it would be installed.
    let named = json!({"task_description": "x", "executor": "claude"});
    let reply = server
        .session_call(&session, &agent, &call(3, "execute_task", named))
        .await;
    let body = error_body(&reply);
    assert_eq!(body["error"]["pointer"], "/executor", "{body}");
    let text = reply.body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("`claude` is not installed on this server"),
        "{text}"
    );
}
