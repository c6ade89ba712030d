//! JSON-RPC-shaped HTTP error answers, so every error on `/mcp` parses as JSON-RPC and says
//! what is wrong: rmcp's plain-text refusals are rewritten, and the ones that only say "could
//! not deserialize" or "Session ID is required" are explained from the request body.

use axum::{
    body::{Body, Bytes},
    extract::Request,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde_json::{Value, json};

use super::diagnose::{self, ParamsCheck, Problem};

/// JSON-RPC parse error.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC invalid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC invalid params.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC method not found.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
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

/// Largest error body from the inner service worth reading.
const MAX_QUOTED: usize = 4096;
/// Largest JSON error body from the inner service read to bound its message; a larger one is
/// replaced by a bare error of its status.
const MAX_JSON_ERROR: usize = 64 * 1024;
/// What rmcp answers (415) when the body is JSON but no JSON-RPC message it knows.
const UNDESERIALIZABLE: &str = "fail to deserialize request body";
/// What rmcp answers (400) to a POST without a session that is no `initialize` it can read.
const NO_SESSION: &str = "Session ID is required";

/// Rewrites non-JSON error answers from the inner service (rmcp answers some with plain text)
/// into JSON-RPC error bodies, keeping other headers; explains the vague ones.
pub(crate) async fn jsonrpc_errors<F, Fut>(request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let (request, body) = match keep_body(request).await {
        Ok(kept) => kept,
        Err(response) => return response,
    };
    let response = next(request).await;
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
        return bounded_json_error(response).await;
    }
    let (mut parts, inner) = response.into_parts();
    let text = match inner.collect().await {
        Ok(collected) => {
            let bytes = collected.to_bytes();
            let cut = bytes.len().min(MAX_QUOTED);
            String::from_utf8_lossy(&bytes[..cut]).trim().to_owned()
        }
        Err(_) => String::new(),
    };
    let (status, code, message, id) = explain(status, &text, body.as_ref());
    let rewritten = error_response(status, code, message, id);
    parts.status = status;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let (_, body) = rewritten.into_parts();
    Response::from_parts(parts, Body::new(body))
}

/// A JSON error answer from the inner service with its `error.message` cut to excerpts: rmcp
/// quotes header and body values whole (`Mcp-Name header `…` does not match body value `…``),
/// and no answer may echo a caller's payload.
async fn bounded_json_error(response: Response) -> Response {
    let (mut parts, inner) = response.into_parts();
    let bytes = match Limited::new(inner, MAX_JSON_ERROR).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let status = parts.status;
            let reason = status.canonical_reason().unwrap_or("error");
            return error_response(status, code_for(status), reason, Value::Null);
        }
    };
    let mut body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(body) => body,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    let Some(message) = body.pointer_mut("/error/message").filter(|m| {
        m.as_str()
            .is_some_and(|m| m.len() > diagnose::EXCERPT_CHARS)
    }) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let shortened = diagnose::shorten(message.as_str().unwrap_or_default());
    *message = Value::String(shortened);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body.to_string()))
}

/// Keeps a POST body (the edge has read it already: a cheap clone) for [`explain`].
async fn keep_body(request: Request) -> Result<(Request, Option<Bytes>), Response> {
    if request.method() != Method::POST {
        return Ok((request, None));
    }
    let (parts, body) = request.into_parts();
    match body.collect().await {
        Ok(collected) => {
            let bytes = collected.to_bytes();
            Ok((
                Request::from_parts(parts, Body::from(bytes.clone())),
                Some(bytes),
            ))
        }
        Err(error) => Err(error_response(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            format!("could not read request body: {error}"),
            Value::Null,
        )),
    }
}

/// The status, code, message and id to answer a plain-text error with.
fn explain(
    status: StatusCode,
    text: &str,
    body: Option<&Bytes>,
) -> (StatusCode, i64, String, Value) {
    let message = body.and_then(|b| serde_json::from_slice::<Value>(b).ok());
    let id = message.as_ref().map_or(Value::Null, diagnose::reply_id);
    match message {
        Some(message)
            if status == StatusCode::UNSUPPORTED_MEDIA_TYPE
                && text.starts_with(UNDESERIALIZABLE) =>
        {
            let Problem { code, message } = diagnose::envelope_problem(&message);
            (StatusCode::BAD_REQUEST, code, message, id)
        }
        Some(message) if status == StatusCode::BAD_REQUEST && text.contains(NO_SESSION) => {
            let (code, text) = without_session(&message);
            (StatusCode::BAD_REQUEST, code, text, id)
        }
        _ if status == StatusCode::BAD_REQUEST && text.contains(NO_SESSION) => (
            status,
            INVALID_REQUEST,
            "Mcp-Session-Id header is required: open a session with `initialize` first".to_owned(),
            id,
        ),
        _ => {
            let text = if text.is_empty() {
                status.canonical_reason().unwrap_or("error").to_owned()
            } else {
                diagnose::shorten(text)
            };
            (status, code_for(status), text, id)
        }
    }
}

/// Why a session-less POST was not served: a malformed `initialize`, or a request that needs
/// a session (or the 2026-07-28 `_meta` that makes it stateless).
fn without_session(message: &Value) -> (i64, String) {
    let method = message.get("method").and_then(Value::as_str);
    if method == Some("initialize") {
        let check = diagnose::params_check("initialize", message.get("params"));
        if let ParamsCheck::Invalid(problem) = check {
            return (INVALID_PARAMS, format!("initialize: {problem}"));
        }
    }
    (
        INVALID_REQUEST,
        "Mcp-Session-Id header is required: open a session with `initialize` first, or send a \
         2026-07-28 request (MCP-Protocol-Version header and `_meta` protocolVersion, \
         clientInfo and clientCapabilities)"
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bytes(value: &Value) -> Bytes {
        Bytes::from(value.to_string())
    }

    #[test]
    fn an_undeserializable_body_is_an_invalid_request_with_its_id() {
        let body = bytes(&json!({"jsonrpc": "2.0", "id": 4, "method": 7}));
        let (status, code, message, id) = explain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "fail to deserialize request body data did not match",
            Some(&body),
        );
        assert_eq!(
            (status, code, id),
            (StatusCode::BAD_REQUEST, INVALID_REQUEST, json!(4))
        );
        assert!(message.contains("`method`"), "{message}");
    }

    #[test]
    fn a_malformed_initialize_names_its_field() {
        let body = bytes(&json!({"jsonrpc": "2.0", "id": "a", "method": "initialize",
            "params": {"protocolVersion": 5, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}));
        let (status, code, message, id) = explain(
            StatusCode::BAD_REQUEST,
            "Bad Request: Session ID is required",
            Some(&body),
        );
        assert_eq!(
            (status, code, id),
            (StatusCode::BAD_REQUEST, INVALID_PARAMS, json!("a"))
        );
        assert!(message.contains("protocolVersion"), "{message}");
    }

    #[test]
    fn other_texts_keep_their_status_bounded() {
        let long = format!(
            "Bad Request: Unsupported MCP-Protocol-Version: {}",
            "9".repeat(5000)
        );
        let (status, code, message, id) = explain(StatusCode::BAD_REQUEST, &long, None);
        assert_eq!(
            (status, code, id),
            (StatusCode::BAD_REQUEST, INVALID_REQUEST, Value::Null)
        );
        assert!(message.len() < 400, "{message}");
    }

    #[tokio::test]
    async fn json_errors_that_quote_header_values_are_cut_to_excerpts() {
        let sent = "x".repeat(4096);
        let inner = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32020,
            "message": format!("Mcp-Name header `{sent}` does not match body value `{sent}`")}});
        let response = (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            inner.to_string(),
        )
            .into_response();
        let bounded = bounded_json_error(response).await;
        assert_eq!(bounded.status(), StatusCode::BAD_REQUEST);
        let body = bounded.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&body).unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Mcp-Name header `"), "{message}");
        assert!(message.len() < 400, "{message}");
        assert!(!message.contains(&"x".repeat(65)), "{message}");
        assert_eq!(
            (body["id"].clone(), body["error"]["code"].clone()),
            (json!(1), json!(-32020))
        );
    }
}
