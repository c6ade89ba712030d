//! Security at the edge: every refusal is JSON-RPC shaped.

use reqwest::StatusCode;
use serde_json::json;

use super::common::{call, error_code, error_message, read, start, start_with_data};

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

#[tokio::test]
async fn probes_refuse_foreign_hosts_and_origins() {
    let server = start(&[]).await;
    let base = server.url.trim_end_matches("/mcp").to_owned();
    for path in ["/health", "/ready", "/metrics"] {
        let get = |headers: &[(&'static str, &'static str)]| {
            let mut request = server.client.get(format!("{base}{path}"));
            for (k, v) in headers {
                request = request.header(*k, *v);
            }
            request.send()
        };
        for bad in [
            [("host", "evil.example")],
            [("host", "[::1]evil.example")],
            [("origin", "https://evil.example")],
            [("origin", "http://localhost.evil.example:3500")],
        ] {
            let reply = read(get(&bad).await.unwrap()).await;
            assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path} {bad:?}");
            assert_eq!(error_code(&reply), -32000, "{path} {bad:?}");
        }
        let ok = get(&[("origin", "http://localhost:6274")]).await.unwrap();
        assert!(
            ok.status() == StatusCode::OK || ok.status() == StatusCode::SERVICE_UNAVAILABLE,
            "{path}: {}",
            ok.status()
        );
    }
}

#[tokio::test]
async fn health_reveals_no_paths_addresses_or_executors() {
    let data = tempfile::tempdir().unwrap().keep();
    let server = start_with_data(
        &[("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#)],
        data.clone(),
    )
    .await;
    let base = server.url.trim_end_matches("/mcp").to_owned();
    for path in ["/health", "/ready"] {
        let response = server
            .client
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap();
        let text = response.text().await.unwrap();
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(report["status"].is_string(), "{text}");
        assert!(
            report["components"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "store")
        );
        for secret in [
            data.display().to_string(),
            "SQLite".to_owned(),
            super::raw::addr(&server.url),
            "available:".to_owned(),
            "command".to_owned(),
            "detail".to_owned(),
        ] {
            assert!(!text.contains(&secret), "{path} reveals {secret:?}: {text}");
        }
    }
    // The full report stays with the `health` tool behind /mcp's checks.
    let session = server.initialize(&[]).await;
    let full = server
        .session_call(&session, &[], &call(2, "health", json!({})))
        .await;
    assert!(
        full.body["result"]["structuredContent"]
            .to_string()
            .contains("available:")
    );
}

/// Raw requests: an HTTP library merges or refuses duplicate `Host` headers.
mod duplicates {
    use super::super::{
        common::start,
        raw::{addr, exchange, post},
    };

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

    async fn refused_naming(url: &str, headers: &[&str], name: &str) {
        let (status, body) = exchange(url, &post(url, headers, INITIALIZE)).await;
        assert_eq!(status, 400, "{headers:?}: {body}");
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], -32600, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(name), "{message}");
    }

    #[tokio::test]
    async fn conflicting_identity_headers_are_refused_naming_the_header() {
        let server = start(&[]).await;
        let url = &server.url;
        // A gateway appends its own X-Agent-Id after the configured one.
        refused_naming(
            url,
            &["x-agent-id: agent-a", "X-Agent-Id: agent-b"],
            "x-agent-id",
        )
        .await;
        refused_naming(
            url,
            &["origin: http://localhost:1", "origin: http://localhost:2"],
            "Origin",
        )
        .await;
        let other_host = format!("host: localhost:{}", addr(url).rsplit(':').next().unwrap());
        refused_naming(url, &[&other_host], "Host").await;
        // Identical copies are one value said twice.
        let (status, body) = exchange(
            url,
            &post(
                url,
                &["x-agent-id: agent-a", "x-agent-id: agent-a"],
                INITIALIZE,
            ),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let same_host = format!("host: {}", addr(url));
        let (status, body) = exchange(url, &post(url, &[&same_host], INITIALIZE)).await;
        assert_eq!(status, 200, "{body}");
    }

    #[tokio::test]
    async fn conflicting_authorization_headers_are_refused() {
        let server = start(&[("HANDOFF_AUTH_TOKEN", "s3cret-token")]).await;
        refused_naming(
            &server.url,
            &[
                "authorization: Bearer s3cret-token",
                "authorization: Bearer other",
            ],
            "Authorization",
        )
        .await;
    }

    #[tokio::test]
    async fn garbage_after_a_bracketed_ipv6_host_is_refused() {
        let server = start(&[]).await;
        let request =
            "GET /health HTTP/1.1\r\nhost: [::1]evil.example\r\nconnection: close\r\n\r\n";
        let (status, body) = exchange(&server.url, request).await;
        assert_eq!(status, 403, "{body}");
        let request = "GET /health HTTP/1.1\r\nhost: [::1]\r\nconnection: close\r\n\r\n";
        assert_eq!(exchange(&server.url, request).await.0, 200);
    }
}
