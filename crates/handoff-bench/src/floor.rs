//! The floor: the cheapest possible answer to the same JSON-RPC body over the same HTTP stack
//! (axum), with no MCP machinery — what Handoff's figures are divided by.

use axum::{Json, Router, routing::post};
use serde_json::{Value, json};

async fn answer(Json(request): Json<Value>) -> Json<Value> {
    Json(json!({
        "jsonrpc": "2.0",
        "id": request.get("id").cloned().unwrap_or(Value::Null),
        "result": {}
    }))
}

/// Serves the floor on `127.0.0.1:port` (0 = any) until the process ends; prints its URL on
/// stderr as `floor listening on http://…/mcp`.
pub async fn serve_floor(port: u16) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    eprintln!("floor listening on http://{addr}/mcp");
    axum::serve(listener, Router::new().route("/mcp", post(answer))).await
}
