//! SSE priming events (an id and empty `data`) go only to sessions that negotiated 2025-11-25
//! or later: the clients of earlier revisions (the MCP Python SDK 1.12.4 in Letta) parse every
//! event's data as JSON and log an error for each.

use reqwest::{RequestBuilder, StatusCode};
use serde_json::json;

use super::{
    common::{TestServer, call, start},
    raw::PATIENCE,
};

/// How many whole events of an SSE body carry only empty `data` lines.
fn dataless_events(body: &str) -> usize {
    body.split("\n\n")
        .filter(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .collect();
            !data.is_empty() && data.iter().all(|d| d.trim().is_empty())
        })
        .count()
}

/// Sends and reads the whole body, which must be an SSE stream; the session the answer names.
async fn sse(request: RequestBuilder) -> (String, Option<String>) {
    let response = open(request).await;
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (read(response).await, session)
}

/// Sends; the answer must be an SSE stream.
async fn open(request: RequestBuilder) -> reqwest::Response {
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    response
}

/// The whole body of a stream, which must end within [`PATIENCE`].
async fn read(response: reqwest::Response) -> String {
    tokio::time::timeout(PATIENCE, response.text())
        .await
        .expect("the stream ends")
        .unwrap()
}

fn post(server: &TestServer, protocol: &str, session: Option<&str>) -> RequestBuilder {
    let mut request = server
        .client
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", protocol);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request
}

#[tokio::test]
async fn only_sessions_of_2025_11_25_or_later_get_priming_events() {
    let server = start(&[]).await;
    for (protocol, primed) in [
        ("2025-03-26", false),
        ("2025-06-18", false),
        ("2025-11-25", true),
    ] {
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": protocol, "capabilities": {},
                       "clientInfo": {"name": "priming-test", "version": "1"}}
        });
        let (body, session) = sse(post(&server, protocol, None).body(initialize.to_string())).await;
        assert!(body.contains(protocol), "{protocol}: {body}");
        assert_eq!(
            dataless_events(&body) > 0,
            primed,
            "initialize, {protocol}: {body:?}"
        );
        let session = session.unwrap();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let done = post(&server, protocol, Some(&session))
            .body(initialized.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(done.status(), StatusCode::ACCEPTED);

        // The GET stream ends with the session; what it carried until then is read whole.
        let stream = open(
            server
                .client
                .get(&server.url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", protocol),
        )
        .await;
        // A plain read-only call is answered as JSON before rmcp; one with a progress token
        // is rmcp's, on an SSE stream.
        let plain = call(1, "ping", json!({"message": protocol}));
        let answer = post(&server, protocol, Some(&session))
            .body(plain.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.headers()["content-type"], "application/json");
        assert!(answer.text().await.unwrap().contains("\"ok\":true"));
        let mut ping = call(2, "ping", json!({"message": protocol}));
        ping["params"]["_meta"] = json!({"progressToken": "p"});
        let (body, _) = sse(post(&server, protocol, Some(&session)).body(ping.to_string())).await;
        assert!(body.contains("\"ok\":true"), "{protocol}: {body}");
        assert_eq!(
            dataless_events(&body) > 0,
            primed,
            "tools/call, {protocol}: {body:?}"
        );
        assert_eq!(server.delete_session(&session).await.status, StatusCode::OK);
        let body = read(stream).await;
        assert_eq!(
            dataless_events(&body) > 0,
            primed,
            "GET stream, {protocol}: {body:?}"
        );
    }
}
