use handoff_engine::{Control, Engine};
use handoff_task::{TaskId, TaskStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{caller, failure::tool_error};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// A control action on the wire.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    /// Stop the task for good (graceful, then forced).
    Cancel,
    /// Freeze a running task.
    Pause,
    /// Unfreeze a paused task.
    Resume,
}

/// Arguments of `send_task_control`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendTaskControlArgs {
    /// Calling agent (defaults to the x-agent-id header).
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// What to do.
    pub control: ControlAction,
    /// Why (recorded in the task history).
    #[schemars(length(max = 2000))]
    pub reason: Option<String>,
}

/// Result of `send_task_control`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SendTaskControlOutput {
    /// The task.
    pub task_id: String,
    /// Its state afterwards.
    pub status: TaskStatus,
    /// False when it already was in the asked-for state.
    pub changed: bool,
    /// What happened.
    pub message: String,
}

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
        "send_task_control"
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
        _ctx: ToolContext,
        args: SendTaskControlArgs,
    ) -> Result<SendTaskControlOutput, ToolError> {
        let agent = caller(self.name(), args.agent_id)?;
        let control = match args.control {
            ControlAction::Cancel => Control::Cancel,
            ControlAction::Pause => Control::Pause,
            ControlAction::Resume => Control::Resume,
        };
        let receipt = self
            .engine
            .control(&agent, &args.task_id, control, args.reason)
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        Ok(SendTaskControlOutput {
            task_id: receipt.task.id.to_string(),
            status: receipt.task.status,
            changed: receipt.changed,
            message: receipt.message,
        })
    }
}
