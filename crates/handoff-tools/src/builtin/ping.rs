use handoff_protocol::{
    builtin::{PingArgs, PingOutput},
    names,
};

use super::{VERSION, text, unix_millis};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

/// `ping`: proves the server answers and shows which agent identity it sees.
#[derive(Debug, Default, Clone, Copy)]
pub struct PingTool;

impl Tool for PingTool {
    type Args = PingArgs;
    type Output = PingOutput;

    fn name(&self) -> &'static str {
        names::PING
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

    async fn call(&self, ctx: ToolContext, args: PingArgs) -> Result<Reply<PingOutput>, ToolError> {
        let output = PingOutput {
            ok: true,
            message: args.message,
            agent_id: ctx.principal().map(|p| p.name().to_string()),
            server: "handoff".to_owned(),
            version: VERSION.to_owned(),
            server_time_ms: unix_millis(std::time::SystemTime::now()),
        };
        let text = text::ping(&output);
        Ok(Reply::new(output, text))
    }
}
