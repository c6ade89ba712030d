//! MCP mode: one Streamable HTTP registration named after the prefix, pointing at
//! `<public_url>/mcp` with the gateway token; Letta registers Handoff's tools under their own
//! names (tagged `mcp:<server>`) and sends `X-Agent-Id` on every call itself.

use std::collections::BTreeSet;

use super::{ConnectError, ConnectOptions, Report, TOOLS, agents, attach};
use crate::{LettaAgent, LettaClient, LettaError, LettaTool, McpServer};

/// Letta's name for the registration type.
const STREAMABLE_HTTP: &str = "streamable_http";

/// Tool names clash across MCP servers: the advice for a second Handoff.
const SECOND_HANDOFF: &str = "; in MCP mode Handoff's tools keep their own names, so a second \
                              Handoff in one organisation must use --mode native";

/// Registers the server, its tools, and attaches them.
pub(crate) async fn connect(
    client: &LettaClient,
    options: &ConnectOptions,
    agents: &[LettaAgent],
    report: &mut Report,
) -> Result<(), ConnectError> {
    let server = options.prefix.as_str();
    let tag = format!("mcp:{server}");
    // Before registering: Letta then registers every tool of the server by name, re-binding
    // a tool of the same name that belongs to someone else.
    let mut before = BTreeSet::new();
    for name in TOOLS {
        for tool in client.tools_named(name).await? {
            if tool.name != *name {
                continue;
            }
            if !tool.tags.contains(&tag) {
                return Err(ConnectError::NameTaken {
                    what: "tool",
                    name: tool.name.clone(),
                    prefix: server.to_owned(),
                    owner: super::owner_of(&tool),
                    hint: SECOND_HANDOFF,
                });
            }
            before.insert(*name);
        }
    }
    ensure_server(client, options, report).await?;
    let mut tools = Vec::new();
    for name in TOOLS {
        let known = before.contains(name);
        if let Some(tool) = ensure_tool(client, options, name, known, report).await? {
            tools.push(tool);
        }
    }
    for agent in agents {
        for tool in &tools {
            attach::ensure_attached(client, agent, tool, report).await?;
        }
    }
    Ok(())
}

/// Registers the server, or points the registration at this endpoint and token.
async fn ensure_server(
    client: &LettaClient,
    options: &ConnectOptions,
    report: &mut Report,
) -> Result<(), ConnectError> {
    let server = options.prefix.as_str();
    let endpoint = options.endpoint()?;
    let token = options.gateway()?.expose();
    let bearer = format!("Bearer {token}");
    let matches = |s: &McpServer| {
        s.server_url.as_deref() == Some(endpoint) && s.auth_token.as_deref() == Some(&bearer)
    };
    let servers = client.mcp_servers().await?;
    match servers.get(server) {
        None => {
            client
                .add_mcp_server(&McpServer {
                    server_name: server.to_owned(),
                    kind: Some(STREAMABLE_HTTP.to_owned()),
                    server_url: Some(endpoint.to_owned()),
                    auth_header: Some("Authorization".to_owned()),
                    auth_token: Some(bearer.clone()),
                })
                .await?;
            let message = format!("registered MCP server {server} at {endpoint}");
            report.did("registered_server", server, None, message);
        }
        Some(s) if s.kind.as_deref() != Some(STREAMABLE_HTTP) => {
            return Err(ConnectError::NameTaken {
                what: "MCP server",
                name: server.to_owned(),
                prefix: server.to_owned(),
                owner: format!("a {} server", s.kind.as_deref().unwrap_or("stdio")),
                hint: "",
            });
        }
        Some(s) if matches(s) => {
            let message = format!("MCP server {server} is already registered at {endpoint}");
            report.saw("server_unchanged", server, None, message);
        }
        Some(_) => {
            client.update_mcp_server(server, endpoint, token).await?;
            if !client.mcp_servers().await?.get(server).is_some_and(matches) {
                return Err(ConnectError::UpdateIgnored {
                    server: server.to_owned(),
                });
            }
            let message = format!("updated MCP server {server}: now {endpoint}");
            report.did("updated_server", server, None, message);
        }
    }
    Ok(())
}

/// Makes sure Letta has Handoff's tool `name` from this server; `None` when Handoff does
/// not offer it.
async fn ensure_tool(
    client: &LettaClient,
    options: &ConnectOptions,
    name: &str,
    known: bool,
    report: &mut Report,
) -> Result<Option<LettaTool>, ConnectError> {
    let server = options.prefix.as_str();
    let tag = format!("mcp:{server}");
    let existing = client
        .tools_named(name)
        .await?
        .into_iter()
        .find(|t| t.name == name && t.tags.contains(&tag));
    let registered = format!("registered tool {name} from MCP server {server}");
    if let Some(tool) = existing {
        // Registering the server made it (Letta lists and registers the server's tools).
        if known {
            let message = format!("tool {name} is registered from MCP server {server}");
            report.saw("tool_unchanged", name, None, message);
        } else {
            report.did("registered_tool", name, None, registered);
        }
        return Ok(Some(tool));
    }
    match client.add_mcp_tool(server, name).await {
        Ok(tool) => {
            report.did("registered_tool", name, None, registered);
            Ok(Some(tool))
        }
        // Letta answers `null` when the server does not list the tool.
        Err(LettaError::Decode { .. }) => {
            let message = format!("skipped {name}: Handoff does not offer it to Letta");
            report.saw("skipped_tool", name, None, message);
            Ok(None)
        }
        Err(e) => Err(ConnectError::McpUnreachable {
            server: server.to_owned(),
            tool: name.to_owned(),
            url: options.endpoint()?.to_owned(),
            detail: e.to_string(),
        }),
    }
}

/// Detaches the server's tools from the agents, then deletes the registration (and with it
/// its tools) unless other agents still use them.
pub(crate) async fn remove(
    client: &LettaClient,
    options: &ConnectOptions,
    agents: &[LettaAgent],
    report: &mut Report,
) -> Result<(), ConnectError> {
    let server = options.prefix.as_str();
    let tag = format!("mcp:{server}");
    let ours: BTreeSet<String> = client
        .mcp_tools()
        .await?
        .into_iter()
        .filter(|t| t.tags.contains(&tag))
        .map(|t| t.id)
        .collect();
    for agent in agents {
        attach::detach_ours(client, agent, &ours, report).await?;
    }
    if !client.mcp_servers().await?.contains_key(server) {
        return Ok(());
    }
    let holders = match options.targets {
        super::Targets::All => Vec::new(),
        super::Targets::Agents(_) => agents::other_holders(client, &ours, agents).await?,
    };
    if holders.is_empty() {
        client.delete_mcp_server(server).await?;
        let message = format!("deleted MCP server {server} and the tools Letta registered from it");
        report.did("deleted_server", server, None, message);
    } else {
        let message = format!(
            "kept MCP server {server}: {} other agent(s) still use its tools",
            holders.len()
        );
        report.saw("kept_server", server, None, message);
    }
    Ok(())
}
