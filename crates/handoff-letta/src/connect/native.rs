//! Native mode: one custom Python tool per Handoff tool, shared by the organisation, and per
//! agent the secrets telling those tools where Handoff is and which token to present.

use std::collections::BTreeSet;

use super::{
    ConnectError, ConnectOptions, Report, TOOLS, agents, attach, handoff,
    python::{self, env_names, marker, native_name},
};
use crate::{LettaAgent, LettaClient, LettaTool, NewTool};
use handoff_protocol::names;

/// Makes or updates the tools, sets each agent's secrets, attaches the tools.
pub(crate) async fn connect(
    client: &LettaClient,
    options: &ConnectOptions,
    agents: &[LettaAgent],
    report: &mut Report,
) -> Result<(), ConnectError> {
    let endpoint = options.endpoint()?;
    let Some(first) = agents.first() else {
        return Ok(());
    };
    let token = options.token_for(&first.id)?;
    let listed = handoff::list_tools(endpoint, &token, &first.id).await?;
    if !listed.iter().any(|t| t.name == names::EXECUTE_TASK) {
        return Err(ConnectError::NoTools {
            url: endpoint.to_owned(),
            agent: first.id.clone(),
        });
    }
    let mut tools = Vec::new();
    for name in TOOLS {
        match listed.iter().find(|t| t.name == *name) {
            Some(tool) => {
                let wanted = python::native_tool(&options.prefix, tool)?;
                tools.push(ensure_tool(client, &options.prefix, &wanted, report).await?);
            }
            None => report.saw(
                "skipped_tool",
                name,
                None,
                format!("skipped {name}: Handoff does not offer it (tools.permissions)"),
            ),
        }
    }
    for agent in agents {
        let token = options.token_for(&agent.id)?;
        ensure_secrets(
            client,
            &options.prefix,
            agent,
            [endpoint, token.expose()],
            report,
        )
        .await?;
        for tool in &tools {
            attach::ensure_attached(client, agent, tool, report).await?;
        }
    }
    Ok(())
}

/// Creates the tool, or updates it when Handoff's schema or the source changed.
async fn ensure_tool(
    client: &LettaClient,
    prefix: &str,
    wanted: &NewTool,
    report: &mut Report,
) -> Result<LettaTool, ConnectError> {
    let name = wanted.json_schema["name"].as_str().unwrap_or_default();
    let existing = client
        .tools_named(name)
        .await?
        .into_iter()
        .find(|t| t.name == name);
    let Some(existing) = existing else {
        let made = client.upsert_tool(wanted).await?;
        report.did("created_tool", name, None, format!("created tool {name}"));
        return Ok(made);
    };
    if !existing.tags.contains(&marker(prefix)) {
        return Err(ConnectError::NameTaken {
            what: "tool",
            name: name.to_owned(),
            prefix: prefix.to_owned(),
            owner: super::owner_of(&existing),
            hint: "",
        });
    }
    if same(&existing, wanted) {
        report.saw(
            "tool_unchanged",
            name,
            None,
            format!("tool {name} is up to date"),
        );
        return Ok(existing);
    }
    let made = client.upsert_tool(wanted).await?;
    report.did("updated_tool", name, None, format!("updated tool {name}"));
    Ok(made)
}

/// Whether Letta's tool is what connect would write now.
fn same(existing: &LettaTool, wanted: &NewTool) -> bool {
    let tags = |t: &[String]| t.iter().cloned().collect::<BTreeSet<_>>();
    existing.source_code.as_deref() == Some(wanted.source_code.as_str())
        && existing.description.as_deref() == Some(wanted.description.as_str())
        && existing.json_schema.as_ref() == Some(&wanted.json_schema)
        && tags(&existing.tags) == tags(&wanted.tags)
}

/// Sets `<PREFIX>_MCP_URL` and `<PREFIX>_MCP_TOKEN` on the agent, keeping its other secrets
/// (Letta replaces the whole set on every update).
async fn ensure_secrets(
    client: &LettaClient,
    prefix: &str,
    agent: &LettaAgent,
    values: [&str; 2],
    report: &mut Report,
) -> Result<(), ConnectError> {
    let names = env_names(prefix);
    let shown = format!("{} and {}", names[0], names[1]);
    let current = |key: &str| {
        agent
            .secrets
            .iter()
            .find(|s| s.key == key)
            .and_then(|s| s.value.as_deref())
    };
    if names.iter().zip(values).all(|(n, v)| current(n) == Some(v)) {
        let message = format!("{shown} already set on {}", agent.id);
        report.saw("secrets_unchanged", &shown, Some(&agent.id), message);
        return Ok(());
    }
    let mut secrets = secret_map(agent, &shown)?;
    for (name, value) in names.iter().zip(values) {
        secrets.insert(name.clone(), value.to_owned());
    }
    client.set_agent_secrets(&agent.id, &secrets).await?;
    let message = format!(
        "set {}={} and {} on {}",
        names[0], values[0], names[1], agent.id
    );
    report.did("set_secrets", &shown, Some(&agent.id), message);
    Ok(())
}

/// The agent's secrets, refusing to rewrite them if Letta hid a value.
fn secret_map(
    agent: &LettaAgent,
    names: &str,
) -> Result<std::collections::BTreeMap<String, String>, ConnectError> {
    agent
        .secret_map()
        .map_err(|key| ConnectError::SecretUnreadable {
            agent: agent.id.clone(),
            key,
            names: names.to_owned(),
        })
}

/// Detaches connect's native tools and removes its secrets from the agents, then deletes the
/// tools unless other agents still have them.
pub(crate) async fn remove(
    client: &LettaClient,
    options: &ConnectOptions,
    agents: &[LettaAgent],
    report: &mut Report,
) -> Result<(), ConnectError> {
    let prefix = &options.prefix;
    let ours: Vec<LettaTool> = client
        .tools_search(&format!("{prefix}_"))
        .await?
        .into_iter()
        .filter(|t| {
            t.tags.contains(&marker(prefix)) && t.name.starts_with(&native_name(prefix, ""))
        })
        .collect();
    let ids: BTreeSet<String> = ours.iter().map(|t| t.id.clone()).collect();
    for agent in agents {
        attach::detach_ours(client, agent, &ids, report).await?;
        remove_secrets(client, prefix, agent, report).await?;
    }
    if ours.is_empty() {
        return Ok(());
    }
    let holders = match options.targets {
        super::Targets::All => Vec::new(),
        super::Targets::Agents(_) => agents::other_holders(client, &ids, agents).await?,
    };
    if !holders.is_empty() {
        let names: Vec<&str> = ours.iter().map(|t| t.name.as_str()).collect();
        let message = format!(
            "kept tools {}: still attached to {} other agent(s)",
            names.join(", "),
            holders.len()
        );
        report.saw("kept_tools", &names.join(","), None, message);
        return Ok(());
    }
    for tool in &ours {
        client.delete_tool(&tool.id).await?;
        report.did(
            "deleted_tool",
            &tool.name,
            None,
            format!("deleted tool {}", tool.name),
        );
    }
    Ok(())
}

/// Removes `<PREFIX>_MCP_URL` and `<PREFIX>_MCP_TOKEN` from the agent, keeping the rest.
async fn remove_secrets(
    client: &LettaClient,
    prefix: &str,
    agent: &LettaAgent,
    report: &mut Report,
) -> Result<(), ConnectError> {
    let names = env_names(prefix);
    if !agent.secrets.iter().any(|s| names.contains(&s.key)) {
        return Ok(());
    }
    let shown = format!("{} and {}", names[0], names[1]);
    let mut secrets = secret_map(agent, &shown)?;
    secrets.retain(|key, _| !names.contains(key));
    client.set_agent_secrets(&agent.id, &secrets).await?;
    let message = format!("removed {shown} from {}", agent.id);
    report.did("removed_secrets", &shown, Some(&agent.id), message);
    Ok(())
}
