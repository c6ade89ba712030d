//! Shared helpers: the test script, a started server, an HTTP client and an SSE parser.

use handoff_scripted_model::{Script, ScriptedModel};
use reqwest::{Client, StatusCode};
use serde_json::Value;

/// The script every test uses.
pub const SCRIPT: &str = r#"{
  "scenarios": [
    {"match": "CREATE-FILE", "turns": [
      {"tool_calls": [{"name": "write", "arguments": {"filePath": "{{cwd}}/hello.txt", "content": "hello\n"}}]},
      {"text": "Created hello.txt in {{cwd}}."}
    ]},
    {"name": "parallel", "match": "PARALLEL", "turns": [
      {"text": "Two at once.", "tool_calls": [
        {"name": "write", "arguments": {"filePath": "a.txt", "content": "a"}},
        {"name": "write", "arguments": {"filePath": "b.txt", "content": "b"}}
      ]}
    ]},
    {"match": "BAD-REQUEST", "turns": [{"error": {"status": 400, "type": "invalid_request_error", "message": "model mock-model does not support this"}}]},
    {"match": "SERVER-ERROR", "turns": [{"error": {"status": 500, "type": "server_error", "message": "upstream exploded"}}]},
    {"match": "HANG", "turns": [{"text": "partial", "hang": true}]},
    {"match": "SLOW", "turns": [{"delay_ms": 300, "text": "slow answer"}]}
  ],
  "default": {"text": "No scenario matched."},
  "untooled": {"text": "Scripted title"},
  "models": ["mock-model", "other-model"]
}"#;

/// A server running [`SCRIPT`].
pub async fn start() -> ScriptedModel {
    ScriptedModel::start(Script::from_json(SCRIPT).unwrap(), None)
        .await
        .unwrap()
}

/// A plain-HTTP client (reqwest still wants a rustls provider installed to build).
pub fn client() -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::new()
}

/// POSTs JSON and returns the status and the whole body as text.
pub async fn post(model: &ScriptedModel, path: &str, body: &Value) -> (StatusCode, String) {
    let response = client()
        .post(format!("{}{path}", model.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.text().await.unwrap())
}

/// POSTs JSON and parses a JSON reply.
pub async fn post_json(model: &ScriptedModel, path: &str, body: &Value) -> (StatusCode, Value) {
    let (status, text) = post(model, path, body).await;
    (status, serde_json::from_str(&text).unwrap())
}

/// One SSE frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The `event:` line, if any.
    pub event: Option<String>,
    /// The `data:` payload.
    pub data: String,
}

impl Frame {
    /// The payload as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

/// Parses a complete SSE body, strictly: every frame ends with a blank line and has data.
pub fn parse_sse(body: &str) -> Vec<Frame> {
    assert!(body.ends_with("\n\n"), "unterminated SSE body: {body:?}");
    body.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut frame = Frame {
                event: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(event) = line.strip_prefix("event: ") {
                    frame.event = Some(event.to_string());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    frame.data.push_str(data);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            assert!(!frame.data.is_empty(), "frame without data: {block:?}");
            frame
        })
        .collect()
}
