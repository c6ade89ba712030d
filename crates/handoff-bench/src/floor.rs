//! The floor: the cheapest possible answer to the same requests over the same HTTP stack
//! (axum), with no MCP machinery — what Handoff's figures are divided by. It answers a whole
//! session's sequence too: `initialize` gets a session id, a notification 202, GET an event
//! stream that stays open until the client leaves, DELETE 200. Given Handoff's `tools/list`
//! result, it answers `tools/list` with those bytes, so both sides send the same ~45 KB.

use std::{
    convert::Infallible,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{
    Json, Router,
    body::{Body, Bytes},
    extract::State,
    http::{HeaderValue, StatusCode, header::CONTENT_TYPE},
    response::{IntoResponse, Response},
    routing::post,
};
use serde_json::{Value, json};

/// What the floor answers with beyond `{}`.
#[derive(Default)]
struct Prepared {
    /// The serialised `tools/list` result, when one was given.
    tools_list: Option<Bytes>,
}

async fn answer(State(prepared): State<Arc<Prepared>>, Json(request): Json<Value>) -> Response {
    // A message without an id is a notification: accepted, nothing to answer.
    let Some(id) = request.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let method = request.get("method").and_then(Value::as_str);
    if method == Some("tools/list")
        && let Some(list) = &prepared.tools_list
    {
        return prepared_answer(&id, list);
    }
    let body = Json(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    if method == Some("initialize") {
        // Unique per process is all a client needs from it.
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let session = NEXT.fetch_add(1, Ordering::Relaxed).to_string();
        return ([("mcp-session-id", session)], body).into_response();
    }
    body.into_response()
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` around a result serialised once, as a server that
/// prepares its answers at start-up sends it.
fn prepared_answer(id: &Value, result: &[u8]) -> Response {
    let id = id.to_string();
    let mut out = Vec::with_capacity(result.len() + id.len() + 32);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result);
    out.push(b'}');
    let mut response = Response::new(Body::from(out));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// An event stream that sends nothing and ends when the client drops the connection.
async fn stream() -> Response {
    let silent = futures::stream::pending::<Result<Bytes, Infallible>>();
    (
        [(CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(silent),
    )
        .into_response()
}

async fn end() -> StatusCode {
    StatusCode::OK
}

/// Serves the floor on `127.0.0.1:port` (0 = any) until the process ends; prints its URL on
/// stderr as `floor listening on http://…/mcp`. With `tools_list` (a file holding a
/// `tools/list` result as JSON), `tools/list` is answered with it.
pub async fn serve_floor(port: u16, tools_list: Option<&Path>) -> std::io::Result<()> {
    let mut prepared = Prepared::default();
    if let Some(path) = tools_list {
        let bytes = std::fs::read(path)?;
        // Checked once here so a bad file fails the start, not every answer.
        serde_json::from_slice::<Value>(&bytes).map_err(std::io::Error::other)?;
        prepared.tools_list = Some(Bytes::from(bytes));
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    eprintln!("floor listening on http://{addr}/mcp");
    let routes = Router::new()
        .route("/mcp", post(answer).get(stream).delete(end))
        .with_state(Arc::new(prepared));
    axum::serve(listener, routes).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_prepared_result_is_enveloped_with_the_request_id() {
        let response = prepared_answer(&json!("a\"b"), br#"{"tools":[]}"#);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let message: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            message,
            json!({"jsonrpc": "2.0", "id": "a\"b", "result": {"tools": []}})
        );
    }
}
