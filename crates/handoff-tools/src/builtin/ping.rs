use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{VERSION, unix_millis};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// Arguments of `ping`; all optional, so `arguments` may be omitted entirely.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PingArgs {
    /// Calling agent (defaults to the `x-agent-id` header); echoed back.
    pub agent_id: Option<AgentId>,
    /// Any text, echoed back.
    #[schemars(length(max = 1024))]
    pub message: Option<String>,
}

/// Result of `ping`.
#[derive(Debug, Serialize, JsonSchema)]
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

/// `ping`: proves the server answers and shows which agent identity it sees.
#[derive(Debug, Default, Clone, Copy)]
pub struct PingTool;

impl Tool for PingTool {
    type Args = PingArgs;
    type Output = PingOutput;

    fn name(&self) -> &'static str {
        "ping"
    }

    fn description(&self) -> &'static str {
        "Check that Handoff is reachable. Echoes `message` and the agent identity Handoff sees \
         for you (from `agent_id` or the x-agent-id header)."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: true,
            idempotent: true,
            ..ToolAnnotations::default()
        }
    }

    async fn call(&self, ctx: ToolContext, args: PingArgs) -> Result<PingOutput, ToolError> {
        Ok(PingOutput {
            ok: true,
            message: args.message,
            agent_id: ctx.agent_id.map(|a| a.to_string()),
            server: "handoff".to_owned(),
            version: VERSION.to_owned(),
            server_time_ms: unix_millis(std::time::SystemTime::now()),
        })
    }
}
