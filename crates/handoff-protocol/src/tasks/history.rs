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
    /// Return only this stored output, read from `artifact_offset` and cut at a line end to
    /// fit one result (no events): page through a large diff with its `next_offset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<ArtifactKind>,
    /// Where in `artifact` to start, in bytes (default 0): a `next_offset` it returned.
    #[schemars(range(min = 0))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_offset: Option<u64>,
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
    /// Where `content` starts in the whole output, in bytes (when `artifact` was asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Pass as `artifact_offset` for the part after `content`; absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
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
