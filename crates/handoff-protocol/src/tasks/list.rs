//! `list_tasks`: the caller's tasks, newest first, paged.

use handoff_task::{AgentId, TaskStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{TaskView, call::tool_call, names};

/// Arguments of `list_tasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksArgs {
    /// Calling agent (defaults to the x-agent-id header); only its tasks are listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Only tasks in this state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    /// Page size (default 50, at most 200).
    #[schemars(range(min = 1, max = 200))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    #[schemars(regex(pattern = r"^c[0-9]{1,19}$"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Only tasks whose description contains this text, in any case (at most 200 characters).
    #[schemars(length(min = 1, max = 200))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The longest `text` filter of `list_tasks`, in characters.
pub const LIST_TEXT_MAX_CHARS: usize = 200;

/// Result of `list_tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListTasksOutput {
    /// Tasks, newest first.
    pub tasks: Vec<TaskView>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

tool_call! {
    ListTasksArgs => names::LIST_TASKS, ListTasksOutput;
}
