//! `get_task_history`: the full, paged record of a task.

use handoff_task::{AgentId, ArtifactKind, FileStat, TaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{EventView, TaskView, call::tool_call, names};

/// Bytes of an artifact shown inline; the rest is reported, never silently dropped.
pub const ARTIFACT_VIEW_BYTES: u64 = 64 << 10;

/// Arguments of `get_task_history`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskHistoryArgs {
    /// Calling agent (defaults to the x-agent-id header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// Events to skip (default 0).
    #[schemars(range(min = 0))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_offset: Option<u64>,
    /// Events to return (default 100, at most 1000).
    #[schemars(range(min = 1, max = 1000))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_limit: Option<u32>,
    /// Also return the stored outputs (first 64 KiB of each, with their full size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// A stored output as shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactView {
    /// What it holds.
    pub kind: ArtifactKind,
    /// Full size in bytes.
    pub size: u64,
    /// The executor produced more than the server keeps (tasks.artifact_max_bytes).
    pub capped: bool,
    /// The first 64 KiB (lossy UTF-8).
    pub content: String,
    /// `content` is only the beginning.
    pub truncated: bool,
    /// For the diff: the changes per file, counted over the whole stored diff (not only
    /// `content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_stat: Option<Vec<FileStat>>,
}

/// Result of `get_task_history`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GetTaskHistoryOutput {
    /// The task.
    pub task: TaskView,
    /// The requested page of events, in order.
    pub events: Vec<EventView>,
    /// Events recorded in total.
    pub total_events: u64,
    /// Offset of this page.
    pub events_offset: u64,
    /// More events follow this page.
    pub has_more: bool,
    /// Stored outputs (when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<ArtifactView>>,
}

tool_call! {
    GetTaskHistoryArgs => names::GET_TASK_HISTORY, GetTaskHistoryOutput;
}
