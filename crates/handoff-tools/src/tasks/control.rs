use handoff_engine::Engine;
use handoff_protocol::{
    names,
    tasks::{SendTaskControlArgs, SendTaskControlOutput},
};

use super::{caller, failure::tool_error, outlook, text};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

/// `send_task_control`: cancel, pause or resume a task.
pub struct SendTaskControlTool {
    engine: Engine,
}

impl SendTaskControlTool {
    /// A tool steering `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for SendTaskControlTool {
    type Args = SendTaskControlArgs;
    type Output = SendTaskControlOutput;

    fn name(&self) -> &'static str {
        names::SEND_TASK_CONTROL
    }

    fn description(&self) -> &'static str {
        "Cancel, pause or resume one of your tasks. Cancel stops the executor now (politely, then \
         by force) and answers once it has stopped; pause/resume freeze and thaw it where the \
         executor supports that. Repeating a control is harmless."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            destructive: true,
            idempotent: true,
            open_world: true,
            ..ToolAnnotations::default()
        }
    }

    async fn call(
        &self,
        ctx: ToolContext,
        args: SendTaskControlArgs,
    ) -> Result<Reply<SendTaskControlOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
        let receipt = self
            .engine
            .control(&agent, &args.task_id, args.control, args.reason)
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let outlook = outlook(&ctx, &agent, &receipt.task, None);
        let output = SendTaskControlOutput {
            task_id: receipt.task.id.to_string(),
            status: receipt.task.status,
            changed: receipt.changed,
            message: receipt.message,
        };
        let text = text::control(&output, args.control, &outlook);
        Ok(Reply::new(output, text))
    }
}
