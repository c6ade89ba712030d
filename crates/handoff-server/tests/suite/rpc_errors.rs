//! Errors rmcp's layer and hyper produce reach clients as JSON-RPC that names the problem:
//! `-32600` for a body that is no JSON-RPC message, `-32602` naming the field for a known
//! method's malformed params (both eras, and `initialize`), and JSON-RPC bodies on hyper's own
//! 400, 414 and 431.

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::{
    common::{Reply, TestServer, error_code, error_message, start},
    raw::{connect, read_until_closed, status_of},
};

/// The body sent in the session era and as a 2026-07-28 stateless request.
async fn both_eras(server: &TestServer, session: &str, body: &Value) -> [Reply; 2] {
    let legacy = server.session_call(session, &[], body).await;
    let mut modern = body.clone();
    if let Some(params) = modern.get_mut("params").and_then(Value::as_object_mut) {
        params.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"}
            }),
        );
    }
    let method = body["method"].as_str().unwrap_or("x").to_owned();
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method.as_str()),
    ];
    // 2026-07-28 routes on Mcp-Name: the tool's name or the task's id.
    let name = [&body["params"]["name"], &body["params"]["taskId"]]
        .into_iter()
        .find_map(|v| v.as_str().map(str::to_owned));
    if let Some(name) = &name {
        headers.push(("mcp-name", name.as_str()));
    }
    let stateless = server.post(&headers, &modern).await;
    [legacy, stateless]
}

#[tokio::test]
async fn json_that_is_no_json_rpc_message_is_an_invalid_request_naming_the_member() {
    let server = start(&[]).await;
    let session = server.initialize(&[]).await;
    for (body, member) in [
        (json!({}), "`jsonrpc`"),
        (
            json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
            "`jsonrpc`",
        ),
        (
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
            "`id`",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
            "`id`",
        ),
        (json!({"jsonrpc": "2.0", "id": 1, "method": 5}), "`method`"),
        (json!({"jsonrpc": "2.0", "id": 1}), "`result` or `error`"),
        (
            json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
            "batch",
        ),
        (json!("ping"), "JSON object"),
    ] {
        for reply in [
            server.session_call(&session, &[], &body).await,
            server
                .post(&[("mcp-protocol-version", "2026-07-28")], &body)
                .await,
        ] {
            assert_eq!(
                reply.status,
                StatusCode::BAD_REQUEST,
                "{body}: {:?}",
                reply.body
            );
            assert_eq!(error_code(&reply), -32600, "{body}");
            let message = error_message(&reply);
            assert!(message.contains(member), "{body}: {message}");
        }
    }
}

#[tokio::test]
async fn known_methods_with_malformed_params_are_invalid_params_naming_the_field() {
    let server = start(&[]).await;
    let session = server
        .initialize_with(
            &[],
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        )
        .await;
    let huge = "p".repeat(100_000);
    for (body, field) in [
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": []}}),
            "params.arguments",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": 5}}),
            "params.taskId",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/update", "params": {"taskId": "t"}}),
            "inputResponses",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "ping", "arguments": huge}}),
            "params.arguments",
        ),
    ] {
        for reply in both_eras(&server, &session, &body).await {
            assert_eq!(error_code(&reply), -32602, "{field}: {:?}", reply.body);
            assert_eq!(reply.body["id"], body["id"], "{field}");
            let message = error_message(&reply);
            assert!(message.contains(field), "{field}: {message}");
            assert!(
                message.len() < 500,
                "the payload came back: {} bytes",
                message.len()
            );
        }
    }
    let unknown = server
        .session_call(
            &session,
            &[],
            &json!({"jsonrpc": "2.0", "id": 5, "method": huge}),
        )
        .await;
    assert_eq!(error_code(&unknown), -32601);
    assert!(error_message(&unknown).len() < 200);
}

#[tokio::test]
async fn a_malformed_initialize_is_invalid_params_naming_the_field() {
    let server = start(&[]).await;
    for (params, field) in [
        (
            json!({"capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
            "protocolVersion",
        ),
        (
            json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
            "clientInfo",
        ),
        (
            json!({"protocolVersion": "2025-06-18", "capabilities": [], "clientInfo": {"name": "x", "version": "1"}}),
            "capabilities",
        ),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": params});
        let reply = server.post(&[], &body).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{field}: {:?}",
            reply.body
        );
        assert_eq!(error_code(&reply), -32602, "{field}");
        assert_eq!(reply.body["id"], 9);
        let message = error_message(&reply);
        assert!(message.contains(field), "{field}: {message}");
        assert!(!message.contains("Session ID"), "{message}");
    }
    // A request that needs a session says how to get one.
    let sessionless = server
        .post(
            &[],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert_eq!(error_code(&sessionless), -32600);
    assert!(error_message(&sessionless).contains("initialize"));
}

/// Sends `request` raw and returns the status and the JSON body of hyper's answer.
async fn raw_answer(server: &TestServer, request: Vec<u8>) -> (u16, Value) {
    let mut stream = connect(&server.url).await;
    // The server may answer and close before it has read everything: a failed write is fine.
    let _ = stream.write_all(&request).await;
    let (bytes, _) = read_until_closed(&mut stream).await;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (_, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("no JSON body ({e}): {text:?}"));
    (status_of(&bytes), body)
}

#[tokio::test]
async fn errors_hyper_answers_itself_carry_json_rpc_bodies() {
    let server = start(&[]).await;
    let host = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let post = |target: &str, headers: &str| {
        format!(
            "POST {target} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n{headers}\r\n{{}}"
        )
        .into_bytes()
    };
    let many: String = (0..200).map(|i| format!("x-filler-{i}: x\r\n")).collect();
    let cases = [
        (
            post(
                &format!("/mcp?pad={}", "a".repeat(70 * 1024)),
                "content-length: 2\r\n",
            ),
            414,
        ),
        (post("/mcp", &many), 431),
        (post("/mcp", "content-length: abc\r\n"), 400),
        (post("/mcp", "content-length: 2\r\nx-custom: a\0b\r\n"), 400),
    ];
    for (request, expected) in cases {
        let (status, body) = raw_answer(&server, request).await;
        assert_eq!(status, expected, "{body}");
        assert_eq!(body["jsonrpc"], "2.0", "{expected}");
        assert_eq!(body["error"]["code"], -32600, "{expected}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    // The server still serves.
    assert!(!server.initialize(&[]).await.is_empty());
}
