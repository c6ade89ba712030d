//! The routes `handoff letta connect` needs: agents with their tools and secrets, custom tools,
//! MCP server registrations, and attaching tools to agents.

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::json;

use super::{LettaClient, Retry};
use crate::{
    LettaError,
    client::tool_wire::{LettaAgent, LettaTool, McpServer, NewTool},
};

impl LettaClient {
    /// Up to `limit` of the organisation's agents after the agent `after` (oldest first), each
    /// with its tools.
    pub async fn agents_page(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<LettaAgent>, LettaError> {
        let cursor = after.map(|a| format!("&after={a}")).unwrap_or_default();
        let path = format!("/v1/agents/?limit={limit}&order=asc&include=agent.tools{cursor}");
        self.read("list agents", &path).await
    }

    /// One agent with its tools and secrets.
    pub async fn agent_with_tools(&self, agent_id: &str) -> Result<LettaAgent, LettaError> {
        let path = format!("/v1/agents/{agent_id}?include=agent.tools&include=agent.secrets");
        self.read("read agent", &path).await
    }

    /// Replaces the agent's tool environment variables with `secrets` (Letta keeps no others).
    pub async fn set_agent_secrets(
        &self,
        agent_id: &str,
        secrets: &BTreeMap<String, String>,
    ) -> Result<(), LettaError> {
        let path = format!("/v1/agents/{agent_id}");
        self.act(
            "set agent secrets",
            Method::PATCH,
            &path,
            Some(json!({ "secrets": secrets })),
        )
        .await
    }

    /// The organisation's tools called exactly `name` (at most one: names are unique).
    pub async fn tools_named(&self, name: &str) -> Result<Vec<LettaTool>, LettaError> {
        let path = format!("/v1/tools/?name={name}&limit=10");
        self.read("find tool", &path).await
    }

    /// The organisation's tools whose names contain `text` (case-insensitive).
    pub async fn tools_search(&self, text: &str) -> Result<Vec<LettaTool>, LettaError> {
        let path = format!("/v1/tools/?search={text}&limit=500");
        self.read("search tools", &path).await
    }

    /// The organisation's tools registered from MCP servers.
    pub async fn mcp_tools(&self) -> Result<Vec<LettaTool>, LettaError> {
        self.read(
            "list MCP tools",
            "/v1/tools/?tool_types=external_mcp&limit=500",
        )
        .await
    }

    /// Creates a custom tool, or updates the one with its name.
    pub async fn upsert_tool(&self, tool: &NewTool) -> Result<LettaTool, LettaError> {
        let body = serde_json::to_value(tool).map_err(|e| LettaError::Decode {
            what: "upsert tool",
            message: e.to_string(),
        })?;
        // An upsert by name: repeating it after a lost answer does no harm.
        self.json(
            "upsert tool",
            Method::PUT,
            "/v1/tools/",
            Some(body),
            Retry::Idempotent,
        )
        .await
    }

    /// Deletes a tool (it disappears from every agent).
    pub async fn delete_tool(&self, tool_id: &str) -> Result<(), LettaError> {
        let path = format!("/v1/tools/{tool_id}");
        self.act("delete tool", Method::DELETE, &path, None).await
    }

    /// Attaches a tool to an agent (attaching it again is harmless).
    pub async fn attach_tool(&self, agent_id: &str, tool_id: &str) -> Result<(), LettaError> {
        let path = format!("/v1/agents/{agent_id}/tools/attach/{tool_id}");
        self.act("attach tool", Method::PATCH, &path, None).await
    }

    /// Detaches a tool from an agent.
    pub async fn detach_tool(&self, agent_id: &str, tool_id: &str) -> Result<(), LettaError> {
        let path = format!("/v1/agents/{agent_id}/tools/detach/{tool_id}");
        self.act("detach tool", Method::PATCH, &path, None).await
    }

    /// The organisation's MCP server registrations by name.
    pub async fn mcp_servers(&self) -> Result<BTreeMap<String, McpServer>, LettaError> {
        self.read("list MCP servers", "/v1/tools/mcp/servers").await
    }

    /// Registers an MCP server; Letta then lists its tools and registers them too (best
    /// effort: the registration stands even when Letta cannot reach the server).
    pub async fn add_mcp_server(&self, server: &McpServer) -> Result<(), LettaError> {
        let body = serde_json::to_value(server).map_err(|e| LettaError::Decode {
            what: "register MCP server",
            message: e.to_string(),
        })?;
        // A second create of the same name fails: the caller looks before trying again.
        self.call(
            "register MCP server",
            Method::PUT,
            "/v1/tools/mcp/servers",
            Some(body),
            Retry::Once,
        )
        .await
        .map(drop)
    }

    /// Points a registration at another URL and bearer token. Letta 0.16.8 stores a token only
    /// from the `token` field (it drops a Streamable HTTP update's `auth_token`).
    pub async fn update_mcp_server(
        &self,
        name: &str,
        url: &str,
        token: &str,
    ) -> Result<(), LettaError> {
        let path = format!("/v1/tools/mcp/servers/{name}");
        let body = json!({ "server_url": url, "token": token });
        self.act("update MCP server", Method::PATCH, &path, Some(body))
            .await
    }

    /// Deletes a registration and every tool Letta registered from it.
    pub async fn delete_mcp_server(&self, name: &str) -> Result<(), LettaError> {
        let path = format!("/v1/tools/mcp/servers/{name}");
        self.act("delete MCP server", Method::DELETE, &path, None)
            .await
    }

    /// Registers one tool of an MCP server as a Letta tool (or updates it); Letta lists the
    /// server's tools to find it, so the server must be reachable from Letta.
    pub async fn add_mcp_tool(&self, server: &str, tool: &str) -> Result<LettaTool, LettaError> {
        let path = format!("/v1/tools/mcp/servers/{server}/{tool}");
        self.json(
            "register MCP tool",
            Method::POST,
            &path,
            None,
            Retry::Idempotent,
        )
        .await
    }
}
