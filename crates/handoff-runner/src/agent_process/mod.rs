//! Coding agents run as one process per task and spoken to in JSON-RPC 2.0, one message per
//! line over stdio (ACP agents, `codex app-server`). The process itself (group or cgroup,
//! isolation launcher, stderr, signals, pause) is the `command` executor's; here is what such
//! agents share on top of it: the lines ([`jsonrpc`]), the state a run's driver and control
//! share ([`Link`]), the loop that follows the process ([`follow`]) and the control handle
//! ([`AgentControl`]). Each protocol adds its handshake, its conversation and its mapping.

mod control;
mod follow;
pub(crate) mod jsonrpc;
mod link;

use std::sync::Arc;

pub(crate) use control::{AgentControl, Protocol};
pub(crate) use follow::{Driver, follow};
pub(crate) use link::{Conversation, Link};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::{
    Capabilities, CommandConfig, CommandExecutor, MessageFormat, PromptVia, Run, RunEvent,
    RunnerError,
};

/// What an agent run can do: take messages and pause; a lost one cannot be reattached.
pub(crate) const CAPABILITIES: Capabilities = Capabilities {
    messages: true,
    pause: true,
    reattach: false,
};

/// The `command` executor that runs an agent's processes: `argv` with `env`, confined by
/// `isolation`; the run's prompt (the handshake's first line) and every later line go to its
/// stdin as they are.
pub(crate) fn launcher(
    argv: Vec<String>,
    env: Vec<(String, String)>,
    isolation: Option<crate::Isolation>,
) -> Result<CommandExecutor, RunnerError> {
    CommandExecutor::new(CommandConfig {
        argv,
        prompt_via: PromptVia::Stdin,
        messages_via_stdin: true,
        env,
        message_format: MessageFormat::Raw,
        isolation,
    })
}

/// The conversation a continued run picks up: `session_id` in the state its first run
/// stored. Without one, the error says what was being done (`context`) and what is `missing`.
pub(crate) fn stored_session(
    state: &Value,
    context: &'static str,
    missing: &str,
) -> Result<String, RunnerError> {
    state
        .get("session_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| RunnerError::Io {
            context,
            message: missing.to_owned(),
        })
}

/// `texts` as text content blocks, the form of an ACP prompt and of Codex's turn input.
pub(crate) fn text_blocks(texts: &[String]) -> Vec<Value> {
    texts
        .iter()
        .map(|text| serde_json::json!({ "type": "text", "text": text }))
        .collect()
}

/// The run handed to the engine: `events` as the driver passes them on, steered through
/// `shared`, with the process's `state` to store.
pub(crate) fn run<P: Protocol>(
    shared: Arc<P>,
    events: mpsc::Receiver<RunEvent>,
    state: Value,
) -> Run {
    Run {
        events,
        control: Box::new(AgentControl::new(shared)),
        state: Some(state),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_continued_run_needs_the_stored_session() {
        let state = json!({"session_id": "s1"});
        assert_eq!(stored_session(&state, "x", "none").unwrap(), "s1");
        for state in [
            json!({}),
            json!({"session_id": ""}),
            json!({"session_id": 3}),
        ] {
            let error = stored_session(&state, "continuing", "the run reported no id")
                .unwrap_err()
                .to_string();
            assert_eq!(error, "continuing: the run reported no id");
        }
    }
}
