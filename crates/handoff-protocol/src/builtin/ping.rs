//! `ping`: is the server there, and which agent identity does it see.

use handoff_task::AgentId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{call::tool_call, names};

/// Arguments of `ping`; all optional, so `arguments` may be omitted entirely.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PingArgs {
    /// Calling agent (defaults to the `x-agent-id` header); echoed back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Any text, echoed back.
    #[schemars(length(max = 1024))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Result of `ping`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PingOutput {
    /// Always true.
    pub ok: bool,
    /// The message sent, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The agent identity Handoff resolved for this call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Server name.
    pub server: String,
    /// Server version.
    pub version: String,
    /// Server clock, milliseconds since the Unix epoch.
    pub server_time_ms: u64,
}

tool_call! {
    PingArgs => names::PING, PingOutput;
}
