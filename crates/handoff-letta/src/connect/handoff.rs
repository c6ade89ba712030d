//! Asking the running Handoff which tools it serves, exactly as a native tool will call it:
//! one stateless MCP 2026-07-28 request with the token and the agent's `x-agent-id`.

use std::time::Duration;

use handoff_config::Secret;
use serde_json::{Map, Value, json};

use super::ConnectError;

/// The protocol version of the one-request calls.
pub(crate) const PROTOCOL: &str = "2026-07-28";

/// A tool as Handoff lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HandoffTool {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments' JSON schema.
    pub input_schema: Map<String, Value>,
}

/// How long Handoff may take to list its tools.
const LIST_WAIT: Duration = Duration::from_secs(30);

/// Pages of `tools/list` followed at most.
const MAX_PAGES: usize = 20;

/// `tools/list` as `agent`, every page.
pub(crate) async fn list_tools(
    endpoint: &str,
    token: &Secret,
    agent: &str,
) -> Result<Vec<HandoffTool>, ConnectError> {
    let http = reqwest::Client::builder()
        .timeout(LIST_WAIT)
        .build()
        .map_err(|e| unreachable(endpoint, e.to_string()))?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut params = json!({ "_meta": meta() });
        if let Some(cursor) = &cursor {
            params["cursor"] = json!(cursor);
        }
        let result = request(&http, endpoint, token, agent, params).await?;
        let page = result["tools"].as_array().cloned().unwrap_or_default();
        tools.extend(page.iter().filter_map(tool));
        cursor = result["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(tools)
}

/// The `_meta` of a stateless request that declares no extension (plain tool results).
pub(crate) fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "handoff-letta-connect", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// One `tools/list` request; its `result`.
async fn request(
    http: &reqwest::Client,
    endpoint: &str,
    token: &Secret,
    agent: &str,
    params: Value,
) -> Result<Value, ConnectError> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params});
    let response = http
        .post(endpoint)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL)
        .header("mcp-method", "tools/list")
        .header("x-agent-id", agent)
        .bearer_auth(token.expose())
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| unreachable(endpoint, e.to_string()))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| unreachable(endpoint, format!("the answer was cut off: {e}")))?;
    let message = parse_answer(&text);
    let refused = |detail: String| ConnectError::HandoffRefused {
        url: endpoint.to_owned(),
        detail,
    };
    match message {
        Some(m) if m["result"].is_object() && status.is_success() => Ok(m["result"].clone()),
        Some(m) if m["error"].is_object() => Err(refused(format!(
            "HTTP {}: {}",
            status.as_u16(),
            m["error"]["message"].as_str().unwrap_or("error")
        ))),
        _ => Err(refused(format!(
            "HTTP {}: {}",
            status.as_u16(),
            clip(text.trim())
        ))),
    }
}

/// The JSON-RPC message of an answer: the last SSE `data:` line that parses, or the body.
pub(crate) fn parse_answer(text: &str) -> Option<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .next_back()
        .or_else(|| serde_json::from_str(text).ok())
}

/// A listed tool, when it has a name and an object schema.
fn tool(value: &Value) -> Option<HandoffTool> {
    Some(HandoffTool {
        name: value["name"].as_str()?.to_owned(),
        description: value["description"].as_str().unwrap_or_default().to_owned(),
        input_schema: value["inputSchema"].as_object()?.clone(),
    })
}

fn unreachable(endpoint: &str, detail: String) -> ConnectError {
    ConnectError::HandoffUnreachable {
        url: endpoint.to_owned(),
        detail,
    }
}

/// At most 200 characters of an answer, for messages.
fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_json_or_the_last_sse_data_line() {
        let json = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
        assert_eq!(parse_answer(json).unwrap()["result"], json!({"tools": []}));
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                   data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}\n\n";
        assert_eq!(parse_answer(sse).unwrap()["result"]["ok"], true);
        assert_eq!(parse_answer("Bad Gateway"), None);
    }

    #[test]
    fn listed_tools_need_a_name_and_an_object_schema() {
        let listed =
            json!({"name": "ping", "description": "Ping.", "inputSchema": {"type": "object"}});
        assert_eq!(tool(&listed).unwrap().name, "ping");
        assert_eq!(tool(&json!({"name": "x", "inputSchema": true})), None);
        assert_eq!(clip(&"é".repeat(300)).chars().count(), 201);
    }
}
