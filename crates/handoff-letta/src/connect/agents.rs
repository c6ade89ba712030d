//! The agents a run works on, and which other agents still hold tools it would delete.

use std::collections::BTreeSet;

use super::{ConnectError, Targets};
use crate::{LettaAgent, LettaClient, LettaError};

/// Agents listed per page.
const PAGE: u32 = 100;

/// The targeted agents, each with its tools and secrets.
pub(crate) async fn targeted(
    client: &LettaClient,
    targets: &Targets,
    letta_url: &str,
) -> Result<Vec<LettaAgent>, ConnectError> {
    let ids: Vec<String> = match targets {
        Targets::Agents(ids) => {
            let mut seen = BTreeSet::new();
            ids.iter().filter(|id| seen.insert(*id)).cloned().collect()
        }
        Targets::All => every(client).await?.into_iter().map(|a| a.id).collect(),
    };
    let mut agents = Vec::with_capacity(ids.len());
    for id in ids {
        let agent = client.agent_with_tools(&id).await.map_err(|e| match e {
            LettaError::NotFound { .. } => ConnectError::AgentNotFound {
                url: letta_url.to_owned(),
                agent: id.clone(),
            },
            other => other.into(),
        })?;
        agents.push(agent);
    }
    Ok(agents)
}

/// Every agent of the organisation, with its tools.
pub(crate) async fn every(client: &LettaClient) -> Result<Vec<LettaAgent>, ConnectError> {
    let mut all: Vec<LettaAgent> = Vec::new();
    loop {
        let after = all.last().map(|a| a.id.clone());
        let page = client.agents_page(after.as_deref(), PAGE).await?;
        let full = page.len() == PAGE as usize;
        all.extend(page);
        if !full {
            return Ok(all);
        }
    }
}

/// The agents other than `except` that have any of `tool_ids` attached.
pub(crate) async fn other_holders(
    client: &LettaClient,
    tool_ids: &BTreeSet<String>,
    except: &[LettaAgent],
) -> Result<Vec<String>, ConnectError> {
    let skip: BTreeSet<&str> = except.iter().map(|a| a.id.as_str()).collect();
    Ok(every(client)
        .await?
        .into_iter()
        .filter(|a| !skip.contains(a.id.as_str()))
        .filter(|a| a.tools.iter().any(|t| tool_ids.contains(&t.id)))
        .map(|a| a.id)
        .collect())
}
