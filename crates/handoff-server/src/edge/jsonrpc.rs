//! JSON-RPC-shaped HTTP error answers, so every error on `/mcp` parses as JSON-RPC.

use axum::{
    body::Body,
    extract::Request,
    middleware::Next,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};

/// JSON-RPC parse error.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC invalid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// Implementation-defined server error, used for edge refusals (auth, origin, host…).
pub(crate) const SERVER_ERROR: i64 = -32000;
/// The code MCP SDKs use for an unknown or expired session.
pub(crate) const SESSION_NOT_FOUND: i64 = -32001;
/// JSON-RPC internal error.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// An HTTP error answer with a JSON-RPC error body.
pub(crate) fn error_response(
    status: StatusCode,
    code: i64,
    message: impl Into<String>,
    id: Value,
) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message.into() },
    });
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

fn code_for(status: StatusCode) -> i64 {
    match status {
        StatusCode::NOT_FOUND => SESSION_NOT_FOUND,
        StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => INVALID_REQUEST,
        s if s.is_server_error() => INTERNAL_ERROR,
        _ => SERVER_ERROR,
    }
}

/// Largest error body worth quoting back.
const MAX_QUOTED: usize = 4096;

/// Rewrites non-JSON error answers from the inner service (rmcp answers some with plain text)
/// into JSON-RPC error bodies, keeping status and other headers.
pub(crate) async fn jsonrpc_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match body.collect().await {
        Ok(collected) => {
            let bytes = collected.to_bytes();
            let cut = bytes.len().min(MAX_QUOTED);
            String::from_utf8_lossy(&bytes[..cut]).trim().to_owned()
        }
        Err(_) => String::new(),
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let rewritten = error_response(status, code_for(status), message, Value::Null);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let (_, body) = rewritten.into_parts();
    Response::from_parts(parts, Body::new(body))
}
