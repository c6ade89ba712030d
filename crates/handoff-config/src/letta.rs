//! Settings of the Letta integration: workspace memory blocks and completion notifications.

use std::time::Duration;

use crate::{Secret, parse::FromRaw};

/// The smallest block limit accepted: room for the task's id, status and a few events.
pub const MIN_BLOCK_LIMIT: u32 = 1_000;

/// The prefix `handoff letta connect` uses unless configured otherwise.
pub const DEFAULT_TOOL_PREFIX: &str = "handoff";

/// The longest prefix: `<prefix>_send_task_message` must stay within Letta's 48-character tool
/// names.
pub const MAX_TOOL_PREFIX: usize = 24;

/// Checks a tool prefix: a lowercase letter, then lowercase letters, digits or `_`.
pub fn check_tool_prefix(prefix: &str) -> Result<(), String> {
    let mut chars = prefix.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !starts_well || !rest_ok || prefix.len() > MAX_TOOL_PREFIX {
        return Err(format!(
            "expected a lowercase letter then lowercase letters, digits or _, at most \
             {MAX_TOOL_PREFIX} characters (e.g. handoff, handoff_staging)"
        ));
    }
    Ok(())
}

/// Letta integration settings (off when `api_url` is unset).
#[derive(Debug, Clone)]
pub struct LettaConfig {
    /// Letta base URL; `None` turns the integration off.
    pub api_url: Option<String>,
    /// Bearer token.
    pub api_token: Option<Secret>,
    /// What `handoff letta connect` names its MCP server, native tools and agent secrets after.
    pub tool_prefix: String,
    /// Keep a workspace memory block per task in the owning agent's memory.
    pub workspace_blocks: bool,
    /// The block `limit` in characters; Handoff never writes a longer value.
    pub block_limit: u32,
    /// A task's block is written at most once per this interval (status changes at once).
    pub min_update_interval: Duration,
    /// How long a finished task's block stays attached.
    pub detach_delay: Duration,
    /// How long a detached block is kept before it is deleted.
    pub block_retention: Duration,
    /// Send the owning agent one message when a task ends (each task may opt out).
    pub notify: bool,
    /// The role of that message.
    pub notify_role: NotifyRole,
    /// Send it also for a task whose final result reached the caller in its
    /// `execute_task {sync: true}` call (the caller knows already).
    pub notify_sync: bool,
    /// Bound on one HTTP call to Letta.
    pub request_timeout: Duration,
    /// Retries of one call on 408/429/5xx and connection failures.
    pub max_retries: u32,
    /// Calls to Letta in flight at once, across all tasks.
    pub max_concurrent_requests: u32,
    /// Calls to Letta started per second at most, across all tasks.
    pub requests_per_second: u32,
    /// How often due detaches, deletes and retries are looked for.
    pub sweep_interval: Duration,
}

impl LettaConfig {
    /// The defaults, with the integration off.
    pub fn off() -> Self {
        Self {
            api_url: None,
            api_token: None,
            tool_prefix: DEFAULT_TOOL_PREFIX.to_owned(),
            workspace_blocks: true,
            block_limit: 6_000,
            min_update_interval: Duration::from_secs(1),
            detach_delay: Duration::from_secs(60),
            block_retention: Duration::from_secs(7 * 24 * 3600),
            notify: true,
            notify_role: NotifyRole::System,
            notify_sync: false,
            request_timeout: Duration::from_secs(30),
            max_retries: 5,
            max_concurrent_requests: 4,
            requests_per_second: 20,
            sweep_interval: Duration::from_secs(30),
        }
    }
}

/// Who a completion notification appears to come from in the agent's conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifyRole {
    /// A system message: an automated notice, not the user speaking.
    System,
    /// A user message.
    User,
}

impl NotifyRole {
    /// The role's name on Letta's wire.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyRole::System => "system",
            NotifyRole::User => "user",
        }
    }
}

impl FromRaw for NotifyRole {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "system" => Ok(NotifyRole::System),
            "user" => Ok(NotifyRole::User),
            _ => Err("expected system or user".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_short_lowercase_identifiers() {
        for good in ["handoff", "h", "handoff_2", "a23456789012345678901234"] {
            assert_eq!(check_tool_prefix(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "Handoff",
            "2handoff",
            "hand-off",
            "_h",
            "a234567890123456789012345",
        ] {
            assert!(check_tool_prefix(bad).is_err(), "{bad}");
        }
    }
}
