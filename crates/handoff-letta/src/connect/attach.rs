//! Attaching tools to agents and detaching them again.

use std::collections::BTreeSet;

use super::{ConnectError, Report};
use crate::{LettaAgent, LettaClient, LettaTool};

/// Attaches `tool` to `agent` unless it already is.
pub(crate) async fn ensure_attached(
    client: &LettaClient,
    agent: &LettaAgent,
    tool: &LettaTool,
    report: &mut Report,
) -> Result<(), ConnectError> {
    let (name, id) = (tool.name.as_str(), agent.id.as_str());
    if agent.tools.iter().any(|t| t.id == tool.id) {
        report.saw(
            "already_attached",
            name,
            Some(id),
            format!("already attached {name} to {id}"),
        );
        return Ok(());
    }
    client.attach_tool(id, &tool.id).await?;
    report.did(
        "attached",
        name,
        Some(id),
        format!("attached {name} to {id}"),
    );
    Ok(())
}

/// Detaches from `agent` every tool of `ours` it has.
pub(crate) async fn detach_ours(
    client: &LettaClient,
    agent: &LettaAgent,
    ours: &BTreeSet<String>,
    report: &mut Report,
) -> Result<(), ConnectError> {
    for tool in agent.tools.iter().filter(|t| ours.contains(&t.id)) {
        client.detach_tool(&agent.id, &tool.id).await?;
        report.did(
            "detached",
            &tool.name,
            Some(&agent.id),
            format!("detached {} from {}", tool.name, agent.id),
        );
    }
    Ok(())
}
