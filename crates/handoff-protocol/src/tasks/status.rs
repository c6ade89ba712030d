//! `get_task_status`: where a task stands.

use handoff_task::{AgentId, ModelUsage, TaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{EventView, TaskView, call::tool_call, names};

/// Arguments of `get_task_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskStatusArgs {
    /// Calling agent (defaults to the x-agent-id header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
}

/// Result of `get_task_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// The latest tool call of the coding agent among its recent events, while it works: what
    /// it is doing now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_call: Option<String>,
    /// What the coding agent wrote last, after its last tool call: its final answer (finished
    /// tasks, when it wrote text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// How the last round's branch was delivered, when the task pushes: `{state: pushed|
    /// push_failed|delivered|hook_failed, branch, remote, error?, hook_exit?, hook_output?}`
    /// (`delivered`: pushed and the server's after-push command succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<serde_json::Value>,
    /// What the task's model calls through Handoff's model gateway took so far: calls, input
    /// (cached included), output and cached tokens, and their cost in US dollars (absent: it
    /// made none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_usage: Option<ModelUsage>,
}

/// A request of the executor waiting for an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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

tool_call! {
    GetTaskStatusArgs => names::GET_TASK_STATUS, GetTaskStatusOutput;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn model_usage_is_shown_when_the_task_called_a_model_and_left_out_otherwise() {
        let wire = json!({
            "task_id": "task_abcdefghijklmnopqrstuvwxyz", "status": "running", "executor": "e",
            "description": "d", "priority": 0, "workdir": "/w", "created_at_ms": 1,
            "metadata": {}, "recent_events": [], "pending_input": []
        });
        let mut status: GetTaskStatusOutput = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(status.model_usage, None);
        assert_eq!(serde_json::to_value(&status).unwrap(), wire);

        let usage = json!({
            "calls": 2, "input_tokens": 30, "output_tokens": 12, "cached_tokens": 4,
            "cost_usd": 0.5
        });
        status.model_usage = Some(serde_json::from_value(usage.clone()).unwrap());
        let shown = serde_json::to_value(&status).unwrap();
        assert_eq!(shown["model_usage"], usage);
        let read: GetTaskStatusOutput = serde_json::from_value(shown).unwrap();
        assert_eq!(read, status);
    }
}
