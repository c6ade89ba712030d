//! The JSON of Letta's tool, MCP server and agent routes that `handoff letta connect` uses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as Letta returns it (`GET /v1/tools/`, `PUT /v1/tools/`, an agent's tools).
#[derive(Debug, Clone, Deserialize)]
pub struct LettaTool {
    /// Letta's id (`tool-<uuid>`).
    pub id: String,
    /// The name, unique per organisation.
    pub name: String,
    /// `custom`, `external_mcp`, `letta_core`, …
    #[serde(default)]
    pub tool_type: Option<String>,
    /// Tags (`mcp:<server>` on MCP tools; Handoff's marker on its native tools).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The description.
    #[serde(default)]
    pub description: Option<String>,
    /// The Python source (custom tools).
    #[serde(default)]
    pub source_code: Option<String>,
    /// The schema the LLM sees.
    #[serde(default)]
    pub json_schema: Option<Value>,
}

/// `PUT /v1/tools/` body: a custom Python tool, created or updated by name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewTool {
    /// The Python source; its function is named like the tool.
    pub source_code: String,
    /// Always `python`.
    pub source_type: String,
    /// The description.
    pub description: String,
    /// Tags.
    pub tags: Vec<String>,
    /// The schema the LLM sees (`{name, description, parameters}`); given, so Letta does not
    /// derive one from the docstring.
    pub json_schema: Value,
}

/// A Streamable HTTP MCP server registration (`PUT /v1/tools/mcp/servers`), and how
/// `GET /v1/tools/mcp/servers` shows one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServer {
    /// The registration's name (unique per organisation).
    pub server_name: String,
    /// `streamable_http`, `sse` or `stdio`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// The endpoint (absent for stdio).
    #[serde(default)]
    pub server_url: Option<String>,
    /// The header the token goes in (`Authorization`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_header: Option<String>,
    /// The header's value (`Bearer <token>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<String>,
}

/// An agent as `handoff letta connect` needs it: its tools and secrets when asked for.
#[derive(Debug, Clone, Deserialize)]
pub struct LettaAgent {
    /// Letta's id (`agent-<uuid>`).
    pub id: String,
    /// The name.
    #[serde(default)]
    pub name: Option<String>,
    /// Attached tools (when included).
    #[serde(default)]
    pub tools: Vec<LettaTool>,
    /// The tool sandbox's environment variables for this agent (when included).
    #[serde(default)]
    pub secrets: Vec<AgentSecret>,
}

impl LettaAgent {
    /// The secrets as a map, as `PATCH /v1/agents/{id}` takes them back (it replaces them all);
    /// `Err(key)` names one whose value Letta did not return, which a rewrite would lose.
    pub fn secret_map(&self) -> Result<BTreeMap<String, String>, String> {
        self.secrets
            .iter()
            .map(|s| match &s.value {
                Some(value) => Ok((s.key.clone(), value.clone())),
                None => Err(s.key.clone()),
            })
            .collect()
    }
}

/// One of an agent's tool environment variables.
#[derive(Debug, Clone, Deserialize)]
pub struct AgentSecret {
    /// The variable's name.
    pub key: String,
    /// Its value (Letta returns it decrypted).
    #[serde(default)]
    pub value: Option<String>,
}
