//! `handoff letta connect`: registers this Handoff with a Letta server and attaches its tools
//! to agents, or (`remove`) detaches and deletes what it made. Two ways for Letta to reach
//! Handoff:
//!
//! - **MCP**: Letta's own MCP client calls `<public_url>/mcp` with a gateway token and sends
//!   `X-Agent-Id` itself. Letta refuses non-public addresses, so this needs a public URL.
//! - **Native**: custom Python tools (`<prefix>_execute_task`, …) run in Letta's tool sandbox
//!   and call Handoff's `/mcp` themselves, one stateless request per call, as the agent in
//!   `LETTA_AGENT_ID`; the URL and token come from the agent's secrets.
//!
//! Every run is idempotent: what is already as wanted is reported, not redone.

mod address;
mod agents;
mod attach;
mod error;
mod exposure;
mod handoff;
mod mcp;
mod native;
mod options;
mod python;
mod report;
mod schema;

use std::time::Duration;

use handoff_config::LettaConfig;
use handoff_protocol::names;

pub use error::ConnectError;
pub use options::{ConnectOptions, ConnectRequest, Mode, ModeChoice, Targets};
pub use report::{Action, Report};

use crate::{LettaClient, LettaError};

/// The Handoff tools an agent gets, in this order: the task tools a Letta agent works with
/// and the reader of cut results (approvals, audit and the service tools stay the server's).
pub const TOOLS: &[&str] = &[
    names::EXECUTE_TASK,
    names::GET_TASK_STATUS,
    names::SEND_TASK_MESSAGE,
    names::SEND_TASK_CONTROL,
    names::LIST_TASKS,
    names::GET_TASK_HISTORY,
    names::GET_TASK_FILES,
    names::READ_TASK_FILE,
    names::READ_TOOL_OUTPUT,
];

/// Retries of one call: a person is waiting, and a run can simply be repeated.
const MAX_RETRIES: u32 = 2;

/// The least time one call may take: Letta is slow under load, and registering an MCP tool
/// makes it open a whole MCP session with Handoff.
const MIN_TIMEOUT: Duration = Duration::from_secs(90);

/// A Letta client for a connect run: the configured server, fewer retries, longer timeouts.
pub fn client(config: &LettaConfig) -> Result<LettaClient, ConnectError> {
    if config.api_url.is_none() {
        return Err(ConnectError::NoLetta);
    }
    let config = LettaConfig {
        max_retries: config.max_retries.min(MAX_RETRIES),
        request_timeout: config.request_timeout.max(MIN_TIMEOUT),
        ..config.clone()
    };
    Ok(LettaClient::new(&config)?)
}

/// Connects (or removes) as `options` say, recording each action in `report` as it happens,
/// so a run that fails half-way still shows what it did.
pub async fn run(
    client: &LettaClient,
    options: &ConnectOptions,
    report: &mut Report,
) -> Result<(), ConnectError> {
    steps(client, options, report)
        .await
        .map_err(|e| explain(e, &options.letta_url))
}

/// Warns of every `letta server` on this host that carries Handoff tokens in its environment:
/// its tool sandbox hands them to every agent's tools.
fn warn_of_exposed_tokens(options: &ConnectOptions, report: &mut Report) {
    let tokens = options.token_values();
    for found in exposure::exposures(std::path::Path::new("/proc"), &tokens) {
        let variables = found.variables.join(", ");
        report.saw(
            "token_in_letta_environment",
            &variables,
            None,
            format!(
                "warning: the Letta server on this host (pid {}) has a Handoff token in its \
                 environment ({variables}): Letta's tool sandbox hands that environment to every \
                 tool of every agent, so any agent can read it. Remove it where Letta starts; \
                 connect keeps tokens in each agent's own secrets.",
                found.pid
            ),
        );
    }
}

async fn steps(
    client: &LettaClient,
    options: &ConnectOptions,
    report: &mut Report,
) -> Result<(), ConnectError> {
    options.check_resolution().await?;
    reachable(client, &options.letta_url).await?;
    warn_of_exposed_tokens(options, report);
    let agents = agents::targeted(client, &options.targets, &options.letta_url).await?;
    report.agents = agents.iter().map(|a| a.id.clone()).collect();
    if agents.is_empty() {
        return Ok(());
    }
    if options.remove {
        // Whatever mode connected them: a remove cleans up after both.
        native::remove(client, options, &agents, report).await?;
        return mcp::remove(client, options, &agents, report).await;
    }
    match options.mode {
        Mode::Native => native::connect(client, options, &agents, report).await,
        Mode::Mcp => mcp::connect(client, options, &agents, report).await,
    }
}

/// Letta answers at all.
async fn reachable(client: &LettaClient, url: &str) -> Result<(), ConnectError> {
    match client.health().await {
        Ok(_) => Ok(()),
        Err(LettaError::Exhausted { last, .. }) => Err(ConnectError::LettaUnreachable {
            url: url.to_owned(),
            detail: last,
        }),
        Err(other) => Err(other.into()),
    }
}

/// A refused credential anywhere means the Letta token.
fn explain(error: ConnectError, url: &str) -> ConnectError {
    match error {
        ConnectError::Letta(LettaError::Refused {
            status: 401 | 403,
            detail,
            ..
        }) => ConnectError::LettaAuth {
            url: url.to_owned(),
            detail,
        },
        other => other,
    }
}

/// Who holds a name connect wanted, for messages.
fn owner_of(tool: &crate::LettaTool) -> String {
    match tool.tags.iter().find_map(|t| t.strip_prefix("mcp:")) {
        Some(server) => format!("a tool of MCP server {server}"),
        None => format!("a {} tool", tool.tool_type.as_deref().unwrap_or("custom")),
    }
}
