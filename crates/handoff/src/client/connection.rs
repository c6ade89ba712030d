//! The MCP client: one stateless 2026-07-28 `tools/call` per request (no `initialize`, no
//! session to keep alive or lose across a server restart), its result read from the JSON or
//! SSE body into the protocol crate's types.

use std::time::Duration;

use handoff_protocol::{ERROR_META_KEY, ToolCall, ToolErrorBody, headers::AGENT_ID_HEADER};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{ClientError, settings::Settings};

/// The protocol revision every request speaks.
const PROTOCOL: &str = "2026-07-28";
/// How long one call may take (the task tools answer at once; `execute_task` is not sync).
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A successful call: the typed result and the structured content it came from (printed
/// as is by `--json`).
#[derive(Debug)]
pub struct Reply<T> {
    /// The result.
    pub value: T,
    /// `structuredContent` exactly as the server sent it.
    pub raw: Value,
}

/// A client of one Handoff endpoint.
pub struct Connection {
    http: reqwest::Client,
    settings: Settings,
}

impl Connection {
    /// A client for `settings` (no I/O).
    pub fn new(settings: Settings) -> Result<Self, ClientError> {
        // reqwest is built with rustls but no provider; an https URL needs one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| ClientError::Usage(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { http, settings })
    }

    /// Calls the tool `args` belongs to.
    pub async fn call<A: ToolCall>(&self, args: &A) -> Result<Reply<A::Output>, ClientError> {
        let arguments = serde_json::to_value(args)
            .map_err(|e| ClientError::Usage(format!("cannot encode {}: {e}", A::NAME)))?;
        let raw = self.call_raw(A::NAME, arguments).await?;
        let value = serde_json::from_value(raw.clone())
            .map_err(|e| ClientError::BadReply(format!("{} result: {e}", A::NAME)))?;
        Ok(Reply { value, raw })
    }

    /// Calls `name` with `arguments`; its `structuredContent`.
    async fn call_raw(&self, name: &str, arguments: Value) -> Result<Value, ClientError> {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {
                        "name": "handoff-cli", "version": env!("CARGO_PKG_VERSION")
                    }
                }
            }
        });
        let mut request = self
            .http
            .post(&self.settings.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .json(&body);
        if let Some(agent) = &self.settings.agent {
            request = request.header(AGENT_ID_HEADER, agent);
        }
        if let Some(token) = &self.settings.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| self.unreachable(&e))?;
        if !status.is_success() {
            return Err(self.refused(status, &text));
        }
        result(&response_message(&text)?)
    }

    fn unreachable(&self, error: &reqwest::Error) -> ClientError {
        let detail = if error.is_connect() {
            "connection refused or no route".to_owned()
        } else if error.is_timeout() {
            "timed out".to_owned()
        } else {
            error.to_string()
        };
        ClientError::Unreachable {
            url: self.settings.url.clone(),
            detail,
        }
    }

    fn refused(&self, status: StatusCode, body: &str) -> ClientError {
        // Refusals at the edge are JSON-RPC error bodies; anything else is shown clipped.
        let message = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| body.chars().take(300).collect());
        if status == StatusCode::UNAUTHORIZED {
            return ClientError::Unauthorized {
                url: self.settings.url.clone(),
                message,
                config: self.settings.config_path.display().to_string(),
            };
        }
        if status == StatusCode::NOT_FOUND {
            return ClientError::Refused {
                status: status.as_u16(),
                message: format!(
                    "{message}; is {} Handoff's MCP endpoint (…/mcp)? set --url or HANDOFF_URL",
                    self.settings.url
                ),
            };
        }
        let hint = if status == StatusCode::FORBIDDEN && message.contains("x-agent-id") {
            "; the token names the agent: drop --agent, HANDOFF_AGENT or `agent` in client.toml"
        } else {
            ""
        };
        ClientError::Refused {
            status: status.as_u16(),
            message: format!("{message}{hint}"),
        }
    }
}

/// The JSON-RPC response in a body: the body itself, or the SSE `data:` line that holds it
/// (progress notifications may come first).
fn response_message(text: &str) -> Result<Value, ClientError> {
    if let Ok(value) = serde_json::from_str::<Value>(text.trim()) {
        return Ok(value);
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .rfind(|v| v.get("result").is_some() || v.get("error").is_some())
        .ok_or_else(|| ClientError::BadReply("no JSON-RPC response in the body".to_owned()))
}

/// The structured content of a `tools/call` response, or why the call failed.
fn result(message: &Value) -> Result<Value, ClientError> {
    if let Some(error) = message.get("error") {
        let message = error["message"]
            .as_str()
            .unwrap_or("(no message)")
            .to_owned();
        return Err(ClientError::Rpc {
            code: error["code"].as_i64().unwrap_or_default(),
            message,
        });
    }
    let result = &message["result"];
    if result["isError"] == Value::Bool(true) {
        let text = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let body =
            serde_json::from_value::<ToolErrorBody>(result["_meta"][ERROR_META_KEY].clone()).ok();
        return Err(ClientError::tool(text, body));
    }
    result
        .get("structuredContent")
        .cloned()
        .ok_or_else(|| ClientError::BadReply("the result has no structuredContent".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_response_is_found_in_json_and_sse_bodies() {
        let plain = r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"a":1}}}"#;
        assert_eq!(
            result(&response_message(plain).unwrap()).unwrap(),
            json!({"a": 1})
        );
        let sse = format!(
            "id: 0\ndata: \n\ndata: {}\n\ndata: {plain}\n\n",
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#
        );
        assert_eq!(
            result(&response_message(&sse).unwrap()).unwrap(),
            json!({"a": 1})
        );
        assert!(response_message("<html>").is_err());
    }

    #[test]
    fn tool_errors_keep_their_text_in_cli_words_and_their_code() {
        let failed = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "isError": true,
            "content": [{"type": "text", "text": "Error NOT_FOUND: task x not found.\nFix: list_tasks."}],
            "_meta": {"handoff/error": {"code": "NOT_FOUND", "message": "task x not found"}}
        }});
        let error = result(&failed).unwrap_err();
        assert_eq!(error.code(), Some("NOT_FOUND"));
        assert_eq!(
            error.to_string(),
            "Error NOT_FOUND: task x not found.\nFix: `handoff tasks`."
        );
        let who = json!({"result": {"isError": true, "content": [{"text": "Error INVALID_ARGUMENTS: …"}],
            "_meta": {"handoff/error": {"code": "INVALID_ARGUMENTS", "message": "m", "pointer": "/agent_id"}}}});
        assert!(
            result(&who)
                .unwrap_err()
                .to_string()
                .contains("--agent NAME")
        );
        let rpc = json!({"error": {"code": -32602, "message": "unknown tool"}});
        assert!(matches!(
            result(&rpc).unwrap_err(),
            ClientError::Rpc { code: -32602, .. }
        ));
    }
}
