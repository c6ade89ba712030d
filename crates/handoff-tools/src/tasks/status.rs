use handoff_engine::Engine;
use handoff_task::TaskId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{EventView, TaskView, caller, failure::tool_error};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// Arguments of `get_task_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskStatusArgs {
    /// Calling agent (defaults to the x-agent-id header).
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
}

/// Result of `get_task_status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GetTaskStatusOutput {
    /// The task.
    #[serde(flatten)]
    pub task: TaskView,
    /// Position in the queue, while queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<u64>,
    /// The last five events, oldest first.
    pub recent_events: Vec<EventView>,
}

/// `get_task_status`: where a task stands.
pub struct GetTaskStatusTool {
    engine: Engine,
}

impl GetTaskStatusTool {
    /// A tool reading from `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for GetTaskStatusTool {
    type Args = GetTaskStatusArgs;
    type Output = GetTaskStatusOutput;

    fn name(&self) -> &'static str {
        "get_task_status"
    }

    fn description(&self) -> &'static str {
        "Current state of one of your tasks: status, timestamps, duration, exit info or error, \
         queue position while queued, and the last five events."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        _ctx: ToolContext,
        args: GetTaskStatusArgs,
    ) -> Result<GetTaskStatusOutput, ToolError> {
        let agent = caller(self.name(), args.agent_id)?;
        let view = self
            .engine
            .status(&agent, &args.task_id)
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        Ok(GetTaskStatusOutput {
            task: TaskView::from(&view.task),
            queue_position: view.queue_position,
            recent_events: view.recent_events.iter().map(EventView::from).collect(),
        })
    }
}
