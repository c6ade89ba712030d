//! The floor: the cheapest possible answer to the same requests over the same HTTP stack
//! (axum), with no MCP machinery — what Handoff's figures are divided by. It answers a whole
//! session's sequence too: `initialize` gets a session id, a notification 202, GET an event
//! stream that stays open until the client leaves, DELETE 200. Given Handoff's answers (its
//! `tools/list` result, its results of the measured tool calls), it sends those bytes, so both
//! sides send the same ~45 KB list and the same status; anything else gets `{}`.

use std::{
    collections::HashMap,
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

/// The key of a `tools/call` answer in an answers file: `tools/call <tool name>`.
pub const TOOL_CALL_KEY: &str = "tools/call ";

/// What the floor answers with beyond `{}`, serialised once.
#[derive(Default)]
struct Prepared {
    /// Results by JSON-RPC method (`tools/list`).
    methods: HashMap<String, Bytes>,
    /// `tools/call` results by tool name.
    tools: HashMap<String, Bytes>,
}

impl Prepared {
    /// Reads an answers file: a JSON object from `tools/list` or `tools/call <name>` to the
    /// result to send.
    fn read(path: &Path) -> std::io::Result<Self> {
        let answers: HashMap<String, Value> =
            serde_json::from_slice(&std::fs::read(path)?).map_err(std::io::Error::other)?;
        let mut prepared = Self::default();
        for (key, result) in answers {
            let bytes = Bytes::from(serde_json::to_vec(&result).map_err(std::io::Error::other)?);
            match key.strip_prefix(TOOL_CALL_KEY) {
                Some(tool) => prepared.tools.insert(tool.to_owned(), bytes),
                None => prepared.methods.insert(key, bytes),
            };
        }
        Ok(prepared)
    }

    /// The prepared result for `request`, if any.
    fn result(&self, method: Option<&str>, request: &Value) -> Option<&Bytes> {
        match method? {
            "tools/call" => self
                .tools
                .get(request.pointer("/params/name").and_then(Value::as_str)?),
            other => self.methods.get(other),
        }
    }
}

async fn answer(State(prepared): State<Arc<Prepared>>, Json(request): Json<Value>) -> Response {
    // A message without an id is a notification: accepted, nothing to answer.
    let Some(id) = request.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let method = request.get("method").and_then(Value::as_str);
    if let Some(result) = prepared.result(method, &request) {
        return prepared_answer(&id, result);
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
/// stderr as `floor listening on http://…/mcp`. With `answers` (a file mapping `tools/list`
/// or `tools/call <name>` to a result), those requests are answered with those results.
pub async fn serve_floor(port: u16, answers: Option<&Path>) -> std::io::Result<()> {
    // Read and checked once here, so a bad file fails the start, not every answer.
    let prepared = answers.map(Prepared::read).transpose()?.unwrap_or_default();
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

    #[test]
    fn answers_are_found_by_method_and_by_tool_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.json");
        let answers = json!({
            "tools/list": {"tools": [{"name": "ping"}]},
            "tools/call get_task_status": {"structuredContent": {"status": "completed"}},
        });
        std::fs::write(&path, answers.to_string()).unwrap();
        let prepared = Prepared::read(&path).unwrap();
        let status = json!({"params": {"name": "get_task_status"}});
        let found = |method, request: &Value| {
            prepared
                .result(Some(method), request)
                .map(|b| serde_json::from_slice::<Value>(b).unwrap())
        };
        assert_eq!(
            found("tools/list", &json!({})),
            Some(answers["tools/list"].clone())
        );
        assert_eq!(
            found("tools/call", &status),
            Some(answers["tools/call get_task_status"].clone())
        );
        assert_eq!(
            found("tools/call", &json!({"params": {"name": "ping"}})),
            None
        );
        assert_eq!(found("ping", &json!({})), None);
    }

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
