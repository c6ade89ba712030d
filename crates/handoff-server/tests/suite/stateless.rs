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
    // What `names` says every instance lists is what the registry serves.
    assert_eq!(names, handoff_protocol::names::listed());
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

/// Its content type, and the body without the figures that move between two calls.
fn comparable(reply: &super::common::Reply) -> (String, serde_json::Value) {
    let mut body = reply.body.clone();
    if let Some(out) = body["result"]["structuredContent"].as_object_mut() {
        out.remove("server_time_ms");
    }
    let kind = reply.headers["content-type"].to_str().unwrap().to_owned();
    (kind, body)
}

#[tokio::test]
async fn plain_stateless_requests_are_answered_before_rmcp_exactly_as_rmcp_answers_them() {
    let server = start(&[]).await;
    // A weighted Accept header is left to rmcp.
    let by_rmcp = [("accept", "application/json;q=1, text/event-stream")];
    for (method, name, params) in [
        ("tools/list", None, json!({})),
        (
            "tools/call",
            Some("ping"),
            json!({"name": "ping", "arguments": {"message": "m"}}),
        ),
    ] {
        let caps = json!({});
        let direct = server
            .stateless_with(1, method, name, params.clone(), &[], caps.clone())
            .await;
        let rmcp = server
            .stateless_with(1, method, name, params, &by_rmcp, caps)
            .await;
        assert_eq!(direct.status, StatusCode::OK, "{:?}", direct.body);
        assert_eq!(comparable(&direct), comparable(&rmcp), "{method}");
    }
    // The revision has no `ping`; rmcp says so, as before.
    let ping = server.stateless(2, "ping", None, json!({})).await;
    assert!(ping.body["error"]["code"].is_i64(), "{:?}", ping.body);
    // A call whose Mcp-Name names another tool is rmcp's to refuse.
    let mismatched = server
        .stateless_with(
            3,
            "tools/call",
            Some("health"),
            json!({"name": "ping", "arguments": {}}),
            &[],
            json!({}),
        )
        .await;
    assert!(
        mismatched.body["error"].is_object(),
        "{:?}",
        mismatched.body
    );
}

/// 2026-07-28 has no `initialize`: a stateless one is answered as every method that revision
/// lacks (404, `-32601`), says what to call instead, and opens no session; an `initialize`
/// without the stateless `_meta` still opens one, whatever its version header says.
#[tokio::test]
async fn a_stateless_initialize_is_a_method_that_revision_lacks() {
    let server = start(&[]).await;
    let params = json!({
        "protocolVersion": "2026-07-28",
        "capabilities": {},
        "clientInfo": {"name": "raw-http", "version": "1"}
    });
    let refused = server
        .stateless(1, "initialize", None, params.clone())
        .await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND, "{:?}", refused.body);
    assert_eq!(refused.body["error"]["code"], -32601, "{:?}", refused.body);
    assert_eq!(refused.body["id"], 1);
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("server/discover"), "{message}");
    assert!(refused.headers.get("mcp-session-id").is_none());
    // Like any other method the revision lacks.
    let unknown = server.stateless(2, "no/such", None, json!({})).await;
    assert_eq!(unknown.status, refused.status);
    assert_eq!(unknown.body["error"]["code"], -32601);

    let legacy = server
        .post(
            &[("mcp-protocol-version", "2026-07-28")],
            &json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": params}),
        )
        .await;
    assert_eq!(legacy.status, StatusCode::OK, "{:?}", legacy.body);
    assert!(legacy.headers.get("mcp-session-id").is_some());
}
