//! 2026-07-28 stateless requests on the same endpoint.

use reqwest::StatusCode;
use serde_json::json;

use super::common::start;

#[tokio::test]
async fn discover_names_handoff_not_the_sdk() {
    let server = start(&[]).await;
    let reply = server
        .stateless(1, "server/discover", None, json!({}))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let result = &reply.body["result"];
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "handoff"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    assert!(result["capabilities"]["tools"].is_object());
}

#[tokio::test]
async fn stateless_list_and_call() {
    let server = start(&[]).await;
    let list = server.stateless(1, "tools/list", None, json!({})).await;
    assert_eq!(list.status, StatusCode::OK, "{:?}", list.body);
    assert!(
        list.headers.get("mcp-session-id").is_none(),
        "no sessions in 2026-07-28"
    );
    let names: Vec<_> = list.body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "execute_task",
            "get_audit_log",
            "get_task_files",
            "get_task_history",
            "get_task_status",
            "health",
            "list_approvals",
            "list_tasks",
            "ping",
            "read_task_file",
            "read_tool_output",
            "revoke_approval",
            "send_task_control",
            "send_task_message",
        ]
    );
    let ping = server
        .stateless(
            2,
            "tools/call",
            Some("ping"),
            json!({"name": "ping", "arguments": {"message": "stateless"}}),
        )
        .await;
    assert_eq!(
        ping.body["result"]["structuredContent"]["message"],
        "stateless"
    );
    assert_eq!(ping.body["result"]["resultType"], "complete");
}

#[tokio::test]
async fn stateless_request_without_meta_is_rejected() {
    let server = start(&[]).await;
    let reply = server
        .post(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
            ],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
        )
        .await;
    assert!(reply.body["error"]["code"].is_i64(), "{:?}", reply.body);
}
