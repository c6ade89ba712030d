//! The floor: the cheapest possible answer to the same requests over the same HTTP stack
//! (axum), with no MCP machinery — what Handoff's figures are divided by. It answers a whole
//! session's sequence too: `initialize` gets a session id, a notification 202, GET an event
//! stream that stays open until the client leaves, DELETE 200.

use std::{
    convert::Infallible,
    sync::atomic::{AtomicU64, Ordering},
};

use axum::{
    Json, Router,
    body::{Body, Bytes},
    http::{StatusCode, header::CONTENT_TYPE},
    response::{IntoResponse, Response},
    routing::post,
};
use serde_json::{Value, json};

async fn answer(Json(request): Json<Value>) -> Response {
    // A message without an id is a notification: accepted, nothing to answer.
    let Some(id) = request.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let body = Json(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    if request.get("method").and_then(Value::as_str) == Some("initialize") {
        // Unique per process is all a client needs from it.
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let session = NEXT.fetch_add(1, Ordering::Relaxed).to_string();
        return ([("mcp-session-id", session)], body).into_response();
    }
    body.into_response()
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
/// stderr as `floor listening on http://…/mcp`.
pub async fn serve_floor(port: u16) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    eprintln!("floor listening on http://{addr}/mcp");
    let routes = Router::new().route("/mcp", post(answer).get(stream).delete(end));
    axum::serve(listener, routes).await
}
