//! A 2025-06-18 session's life, one HTTP request per step, so each can be timed on its own:
//! `initialize`, `notifications/initialized`, the GET stream, DELETE.

use reqwest::{Response, header::CONTENT_TYPE};
use serde_json::json;

use super::{McpClient, SESSION_PROTOCOL};

impl McpClient {
    /// POST `initialize`; keeps the session id the server returned.
    pub(crate) async fn initialize(&mut self) -> Result<(), String> {
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": SESSION_PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "handoff-bench", "version": "1"}
            }
        });
        let (headers, _) = self.post(&init, &[]).await?;
        let session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or("initialize returned no session id")?
            .to_owned();
        self.session = Some(session);
        Ok(())
    }

    /// POST `notifications/initialized`.
    pub(crate) async fn initialized(&mut self) -> Result<(), String> {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(&note, &[]).await.map(|_| ())
    }

    /// GET the session's SSE stream; `Ok` once the server has answered 200 with an event
    /// stream. The stream stays open until the returned response is dropped.
    pub(crate) async fn open_stream(&self) -> Result<Response, String> {
        let session = self.session.as_deref().ok_or("no session to stream")?;
        let response = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("x-agent-id", &self.agent)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", SESSION_PROTOCOL)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if status.is_success() && event_stream {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        Err(format!("GET stream: HTTP {status}: {body}"))
    }

    /// DELETE the session. `last` adds `Connection: close`: a client that built its HTTP
    /// client for this one session (as Letta's does) closes the connection with it.
    pub(crate) async fn end_session(&mut self, last: bool) -> Result<(), String> {
        let session = self.session.take().ok_or("no session to end")?;
        let mut request = self
            .http
            .delete(&self.url)
            .header("x-agent-id", &self.agent)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", SESSION_PROTOCOL);
        if last {
            request = request.header("connection", "close");
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response.text().await.map_err(|e| e.to_string())?;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("DELETE: HTTP {status}: {body}"))
        }
    }
}
