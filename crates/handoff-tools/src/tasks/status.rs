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
    /// While input_required: what the executor asks, oldest first. Answer with
    /// send_task_message, message_type approval.
    pub pending_input: Vec<PendingInputView>,
    /// What the completion evaluator concluded: `{status: done|not_done|stuck|max_cycles|
    /// budget_exhausted|unverified|error, cycles, reason, confidence, remaining[], checks[]}`,
    /// or `evaluating` while it continues the executor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<serde_json::Value>,
}

/// A request of the executor waiting for an answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingInputView {
    /// The request's id (`request_id` in an approval picks it; the oldest is answered otherwise).
    pub request_id: String,
    /// `permission` or `question`.
    pub kind: String,
    /// The permission asked for (bash, edit, external_directory …); `question` for questions.
    pub permission: String,
    /// What it applies to (commands, paths).
    pub patterns: Vec<String>,
    /// One line for people.
    pub title: String,
    /// The executor's details (tool input, question options).
    pub detail: serde_json::Value,
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
         queue position while queued, the last five events, and while input_required the \
         executor's pending requests."
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
            pending_input: view
                .pending_input
                .into_iter()
                .map(|r| PendingInputView {
                    request_id: r.id,
                    kind: match r.kind {
                        handoff_runner::InputKind::Permission => "permission",
                        handoff_runner::InputKind::Question => "question",
                    }
                    .to_owned(),
                    permission: r.permission,
                    patterns: r.patterns,
                    title: r.title,
                    detail: r.detail,
                })
                .collect(),
            completion: view.completion,
        })
    }
}
