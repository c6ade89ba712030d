//! A minimal MCP client over Streamable HTTP, both eras, for load generation.

use reqwest::{Client, header::HeaderMap};
use serde_json::{Value, json};

use crate::ops::Op;

mod session;

/// The protocol version of session-era requests (what Letta's client speaks).
const SESSION_PROTOCOL: &str = "2025-06-18";

/// Which protocol era a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// `initialize` + `Mcp-Session-Id` (2025-06-18).
    Session,
    /// 2026-07-28 stateless requests (`_meta` + `Mcp-Method` headers).
    Stateless,
    /// The floor: the bare JSON-RPC body, no MCP headers.
    Floor,
    /// The floor sent stateless requests: their `_meta` and headers, for the stateless rows.
    FloorStateless,
}

impl Era {
    /// The era's name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Era::Session => "session",
            Era::Stateless => "stateless",
            Era::Floor => "floor",
            Era::FloorStateless => "floor-sl",
        }
    }

    /// Whether this is one of the floor's shapes.
    pub(crate) fn is_floor(self) -> bool {
        matches!(self, Era::Floor | Era::FloorStateless)
    }

    /// The floor's shape of this era's requests.
    pub(crate) fn floor(self) -> Era {
        match self {
            Era::Stateless | Era::FloorStateless => Era::FloorStateless,
            Era::Session | Era::Floor => Era::Floor,
        }
    }

    /// Whether requests carry the 2026-07-28 `_meta` and headers.
    fn stateless(self) -> bool {
        matches!(self, Era::Stateless | Era::FloorStateless)
    }
}

/// One simulated MCP client.
pub(crate) struct McpClient {
    http: Client,
    url: String,
    era: Era,
    agent: String,
    session: Option<String>,
    next_id: u64,
}

impl McpClient {
    /// A client with no session yet (no I/O).
    pub(crate) fn new(http: Client, url: &str, era: Era, agent: &str) -> Self {
        Self {
            http,
            url: url.to_owned(),
            era,
            agent: agent.to_owned(),
            session: None,
            next_id: 1,
        }
    }

    /// Connects: a session-era client initializes first.
    pub(crate) async fn connect(
        http: Client,
        url: &str,
        era: Era,
        agent: &str,
    ) -> Result<Self, String> {
        let mut client = Self::new(http, url, era, agent);
        if era == Era::Session {
            client.initialize().await?;
            client.initialized().await?;
        }
        Ok(client)
    }

    /// Sends one op; `Err` on transport errors, JSON-RPC errors and `isError` results.
    pub(crate) async fn call(&mut self, op: Op, task_id: &str) -> Result<Value, String> {
        let (method, name) = op.method();
        let result = self.request(method, name, op.params(task_id)).await?;
        // The floor answers `tools/list` too: an empty answer would make its row a cheaper one.
        let listed = result
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| !tools.is_empty());
        if op == Op::ToolsList && !listed {
            return Err("tools/list answered without tools".to_owned());
        }
        // Likewise the floor's status: it must be a whole status, as Handoff's is.
        let status = result.pointer("/structuredContent/status").is_some();
        if op == Op::GetTaskStatus && !status {
            return Err("get_task_status answered without a status".to_owned());
        }
        Ok(result)
    }

    /// Calls one tool with `arguments`; its structured result.
    pub(crate) async fn tool(&mut self, name: &str, arguments: Value) -> Result<Value, String> {
        let params = json!({"name": name, "arguments": arguments});
        let result = self.request("tools/call", Some(name), params).await?;
        Ok(result.get("structuredContent").cloned().unwrap_or(result))
    }

    async fn request(
        &mut self,
        method: &str,
        name: Option<&str>,
        mut params: Value,
    ) -> Result<Value, String> {
        let mut extra = Vec::new();
        if self.era.stateless() {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "handoff-bench", "version": "1"}
            });
            extra.push(("mcp-method", method));
            if let Some(name) = name {
                extra.push(("mcp-name", name));
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (_, reply) = self.post(&body, &extra).await?;
        if let Some(error) = reply.get("error") {
            return Err(format!("JSON-RPC error: {error}"));
        }
        let result = reply.get("result").cloned().unwrap_or(Value::Null);
        if result.get("isError") == Some(&Value::Bool(true)) {
            return Err(format!("tool error: {result}"));
        }
        Ok(result)
    }

    pub(super) async fn post(
        &self,
        body: &Value,
        extra: &[(&str, &str)],
    ) -> Result<(HeaderMap, Value), String> {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("x-agent-id", &self.agent)
            .json(body);
        match (self.era, &self.session) {
            (Era::Session, Some(session)) => {
                request = request
                    .header("mcp-session-id", session)
                    .header("mcp-protocol-version", SESSION_PROTOCOL);
            }
            (era, _) if era.stateless() => {
                request = request.header("mcp-protocol-version", "2026-07-28");
            }
            _ => {}
        }
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {text}"));
        }
        if text.is_empty() {
            return Ok((headers, Value::Null));
        }
        // JSON responses are configured; an SSE body carries the message in its data line.
        let json_text = text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("data:"))
            .map_or(text.as_str(), str::trim);
        let value =
            serde_json::from_str(json_text).map_err(|e| format!("bad body ({e}): {text}"))?;
        Ok((headers, value))
    }
}
