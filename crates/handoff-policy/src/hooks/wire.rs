//! What a hook reads on stdin and may print on stdout — Claude Code's field names, so hooks
//! written for Claude Code run unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The JSON a hook gets on stdin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookInput {
    /// The session (Handoff: the task id for executor calls, the MCP session or agent for tools).
    pub session_id: String,
    /// Claude Code's transcript path; Handoff has none and sends an empty string.
    pub transcript_path: String,
    /// The working directory.
    pub cwd: String,
    /// The event.
    pub hook_event_name: &'static str,
    /// The tool (`Bash`, `Edit`, `mcp__handoff__execute_task` …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The tool's input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    /// The call's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// What the tool returned (PostToolUse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    /// Whether this turn is already a continuation a Stop hook asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
    /// The Handoff task, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The agent that owns the task or made the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// TaskEnd: the final status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl HookInput {
    /// An input for `event` with nothing but the session and directory set.
    pub fn new(
        event: super::HookEvent,
        session_id: impl Into<String>,
        cwd: impl Into<String>,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            transcript_path: String::new(),
            cwd: cwd.into(),
            hook_event_name: event.as_str(),
            tool_name: None,
            tool_input: None,
            tool_use_id: None,
            tool_response: None,
            stop_hook_active: None,
            task_id: None,
            agent_id: None,
            status: None,
        }
    }
}

/// Event-specific answers (`hookSpecificOutput`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpecificOutput {
    /// Which event the answer is for.
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// PreToolUse: `allow`, `deny` or `ask`.
    #[serde(default)]
    pub permission_decision: Option<String>,
    /// Why.
    #[serde(default)]
    pub permission_decision_reason: Option<String>,
    /// PreToolUse: replaces the tool input (validated again).
    #[serde(default)]
    pub updated_input: Option<Value>,
    /// Text added to what the agent sees.
    #[serde(default)]
    pub additional_context: Option<String>,
}

/// The JSON a hook may print on stdout with exit code 0 (unknown fields are ignored, as in
/// Claude Code, whose format grows).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// `false` stops the task (with `stopReason`).
    #[serde(default, rename = "continue")]
    pub continue_: Option<bool>,
    /// Why the task stops.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Legacy / Stop / PostToolUse decision: `block` (or PreToolUse's old `approve`).
    #[serde(default)]
    pub decision: Option<String>,
    /// The reason for `decision`.
    #[serde(default)]
    pub reason: Option<String>,
    /// A message for the user.
    #[serde(default)]
    pub system_message: Option<String>,
    /// Event-specific answers.
    #[serde(default)]
    pub hook_specific_output: Option<HookSpecificOutput>,
}
