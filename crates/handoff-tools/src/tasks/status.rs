use handoff_engine::{Engine, ModelUsage};
use handoff_protocol::{
    EventView, TaskView, names,
    tasks::{GetTaskStatusArgs, GetTaskStatusOutput, PendingInputView},
};

use super::{
    caller,
    closing::{closing_of, tool_call_line},
    failure::tool_error,
    outlook, text,
};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

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

impl GetTaskStatusTool {
    /// What the task's model calls took so far; a failure to count it leaves it out rather
    /// than failing the status it decorates.
    async fn model_usage(&self, task: &handoff_task::Task) -> Option<ModelUsage> {
        match self.engine.model_usage(task).await {
            Ok(usage) => usage,
            Err(e) => {
                tracing::warn!(task = %task.id, error = %e, "cannot count the task's model usage");
                None
            }
        }
    }
}

impl Tool for GetTaskStatusTool {
    type Args = GetTaskStatusArgs;
    type Output = GetTaskStatusOutput;

    fn name(&self) -> &'static str {
        names::GET_TASK_STATUS
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
        ctx: ToolContext,
        args: GetTaskStatusArgs,
    ) -> Result<Reply<GetTaskStatusOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
        let view = self
            .engine
            .status(&agent, &args.task_id)
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        // The closing text usually sits before the last five events (the final status, the
        // integrations' notes): a finished task's status carries a wider window.
        let (answer, delivery) = if view.task.status.is_terminal() {
            let closing = closing_of(&view.closing_events);
            (closing.answer, closing.delivery)
        } else {
            (None, None)
        };
        let outlook = outlook(&ctx, &agent, &view.task, answer.clone());
        let model_usage = self.model_usage(&view.task).await;
        let last_tool_call = view.last_tool_call.as_ref().map(tool_call_line);
        let output = GetTaskStatusOutput {
            task: TaskView::from(&view.task),
            queue_position: view.queue_position,
            recent_events: view
                .recent_events
                .into_iter()
                .map(EventView::from)
                .collect(),
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
            last_tool_call,
            answer: answer.filter(|a| !a.trim().is_empty()),
            delivery,
            model_usage,
        };
        let text = text::status(&output, &outlook);
        Ok(Reply::new(output, text))
    }
}
