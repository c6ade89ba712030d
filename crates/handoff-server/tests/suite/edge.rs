//! Security at the edge: every refusal is JSON-RPC shaped.

use reqwest::StatusCode;
use serde_json::json;

use super::common::{call, error_code, error_message, read, start};

#[tokio::test]
async fn bad_origins_are_forbidden_including_prefix_tricks() {
    let server = start(&[]).await;
    for origin in [
        "http://localhost.evil.example",
        "http://localhost.evil.example:3500",
        "http://evil.example",
        "https://localhost:3500",
        "null",
        "http://localhost:3500/path",
    ] {
        let reply = server
            .post(&[("origin", origin)], &call(1, "ping", json!({})))
            .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{origin}");
        assert_eq!(error_code(&reply), -32000, "{origin}");
    }
    let ok = server
        .initialize(&[("origin", "http://localhost:6274")])
        .await;
    assert!(!ok.is_empty());
}

#[tokio::test]
async fn bad_host_is_forbidden() {
    let server = start(&[]).await;
    let reply = server
        .post(&[("host", "evil.example")], &call(1, "ping", json!({})))
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert!(error_message(&reply).contains("Host"));
}

#[tokio::test]
async fn bearer_token_is_required_when_configured() {
    let server = start(&[("HANDOFF_AUTH_TOKEN", "s3cret-token")]).await;
    let missing = server.post(&[], &call(1, "ping", json!({}))).await;
    assert_eq!(missing.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        missing.headers["www-authenticate"],
        "Bearer realm=\"handoff\""
    );
    error_code(&missing);
    let wrong = server
        .post(
            &[("authorization", "Bearer nope")],
            &call(1, "ping", json!({})),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(
        wrong.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );
    let session = server
        .initialize(&[("authorization", "Bearer s3cret-token")])
        .await;
    let reply = server
        .session_call(
            &session,
            &[("authorization", "Bearer s3cret-token")],
            &call(2, "ping", json!({})),
        )
        .await;
    assert_eq!(reply.body["result"]["structuredContent"]["ok"], true);
    // Health probes stay open.
    let health = server
        .client
        .get(server.url.replace("/mcp", "/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
}

#[tokio::test]
async fn oversize_body_is_413_json() {
    let server = start(&[("HANDOFF_MAX_BODY_BYTES", "64k")]).await;
    let big = "x".repeat(70 * 1024);
    let reply = server
        .post(&[], &call(1, "ping", json!({"message": big})))
        .await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(&reply), -32600);
    assert!(error_message(&reply).contains("65536"));
}

#[tokio::test]
async fn chunked_oversize_body_is_413_json() {
    let server = start(&[("HANDOFF_MAX_BODY_BYTES", "64k")]).await;
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..20).map(|_| Ok(vec![b' '; 8 * 1024])).collect();
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let response = server
        .client
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
        .send()
        .await
        .unwrap();
    let reply = read(response).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    error_code(&reply);
}

#[tokio::test]
async fn invalid_json_is_a_parse_error() {
    let server = start(&[]).await;
    for body in ["{", "not json", "{\"jsonrpc\": \"2.0\", \"id\": 1,"] {
        let response = server
            .client
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
            .await
            .unwrap();
        let reply = read(response).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(error_code(&reply), -32700, "{body}");
    }
}

#[tokio::test]
async fn invalid_agent_header_is_rejected() {
    let server = start(&[]).await;
    let reply = server
        .post(&[("x-agent-id", "not valid!")], &call(1, "ping", json!({})))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(error_message(&reply).contains("x-agent-id"));
}

#[tokio::test]
async fn transport_errors_from_the_sdk_are_json_rpc_too() {
    let server = start(&[]).await;
    // An unknown session id: rmcp answers 404 in plain text; the edge rewrites it.
    let reply = server
        .session_call("no-such-session", &[], &call(1, "ping", json!({})))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&reply), -32001);
    // A request without the MCP Accept header.
    let response = server
        .client
        .post(&server.url)
        .header("content-type", "application/json")
        .body(call(1, "ping", json!({})).to_string())
        .send()
        .await
        .unwrap();
    let reply = read(response).await;
    assert!(reply.status.is_client_error(), "{}", reply.status);
    error_code(&reply);
}

#[tokio::test]
async fn cors_headers_only_for_configured_origins() {
    let server = start(&[("HANDOFF_CORS_ORIGINS", "https://app.example.com")]).await;
    let preflight = |origin: &'static str| {
        server
            .client
            .request(reqwest::Method::OPTIONS, &server.url)
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .send()
    };
    let allowed = preflight("https://app.example.com").await.unwrap();
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let other = preflight("https://other.example.com").await.unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
}
