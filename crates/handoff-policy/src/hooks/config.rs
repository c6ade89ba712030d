//! Which hooks run on which event.

use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    /// Before a tool call is judged and run; may allow, ask, deny or rewrite its input.
    PreToolUse,
    /// After a tool call, seeing exactly what the caller will see; may block (flag) it.
    PostToolUse,
    /// The executor's turn ended; `{"decision":"block","reason"}` becomes a continuation prompt.
    Stop,
    /// A task is about to start; exit 2 refuses it.
    TaskStart,
    /// A task ended (informational).
    TaskEnd,
}

impl HookEvent {
    /// The event's wire name (`hook_event_name`).
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::TaskStart => "TaskStart",
            HookEvent::TaskEnd => "TaskEnd",
        }
    }
}

fn default_timeout() -> u64 {
    60
}

/// One configured hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// When it runs.
    pub event: HookEvent,
    /// Tool names it applies to: exact (`Bash`), alternatives (`Edit|Write`) or a regex
    /// (`mcp__handoff__.*`); empty or `*` for every tool. Ignored for events without a tool.
    #[serde(default)]
    pub matcher: String,
    /// Run with `sh -c`.
    pub command: String,
    /// Killed (with its process group) after this many seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// A hook that times out or cannot start blocks instead of being ignored.
    #[serde(default)]
    pub fail_closed: bool,
}

impl HookSpec {
    /// The time limit.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.max(1))
    }

    /// Whether the hook applies to `tool` (events without a tool match every hook).
    pub fn matches(&self, tool: Option<&str>) -> bool {
        let matcher = self.matcher.trim();
        let Some(tool) = tool else { return true };
        if matcher.is_empty() || matcher == "*" {
            return true;
        }
        let plain = matcher
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '|');
        if plain {
            return matcher.split('|').any(|alt| alt == tool);
        }
        // Anchored, so `Edit` in a regex never matches `NotebookEdit`.
        Regex::new(&format!("^(?:{matcher})$")).is_ok_and(|re| re.is_match(tool))
    }

    /// Checks the matcher compiles (called when the configuration is read).
    pub fn validate(&self) -> Result<(), String> {
        if self.command.trim().is_empty() {
            return Err(format!(
                "a {} hook has an empty command",
                self.event.as_str()
            ));
        }
        let m = self.matcher.trim();
        if !m.is_empty() && m != "*" {
            Regex::new(&format!("^(?:{m})$"))
                .map_err(|e| format!("hook matcher `{m}` is not a valid regex: {e}"))?;
        }
        Ok(())
    }
}

/// Every configured hook, in configuration order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HooksConfig {
    /// The hooks.
    pub hooks: Vec<HookSpec>,
}

impl HooksConfig {
    /// Whether any hook is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// Whether a `PreToolUse` hook would see `tool` (its calls must then reach Handoff).
    pub fn intercepts(&self, tool: &str) -> bool {
        self.hooks
            .iter()
            .any(|h| h.event == HookEvent::PreToolUse && h.matches(Some(tool)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(matcher: &str) -> HookSpec {
        HookSpec {
            event: HookEvent::PreToolUse,
            matcher: matcher.to_owned(),
            command: "true".to_owned(),
            timeout_secs: 5,
            fail_closed: false,
        }
    }

    #[test]
    fn matchers_are_exact_alternatives_or_anchored_regexes() {
        assert!(spec("Bash").matches(Some("Bash")));
        assert!(!spec("Bash").matches(Some("BashOutput")));
        assert!(spec("Edit|Write").matches(Some("Write")));
        assert!(spec("").matches(Some("Anything")));
        assert!(spec("*").matches(Some("Anything")));
        assert!(spec("mcp__handoff__.*").matches(Some("mcp__handoff__execute_task")));
        assert!(!spec("Edit.*").matches(Some("NotebookEdit")));
        assert!(spec("Bash").matches(None));
    }

    #[test]
    fn bad_matchers_and_empty_commands_are_refused() {
        assert!(spec("(unclosed").validate().is_err());
        let mut empty = spec("Bash");
        empty.command = " ".to_owned();
        assert!(empty.validate().is_err());
        assert!(spec("Edit|Write").validate().is_ok());
    }
}
