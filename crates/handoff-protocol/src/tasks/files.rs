//! `get_task_files` and `read_task_file`: what is in a task's working directory.

use handoff_task::{AgentId, TaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{call::tool_call, names};

/// Arguments of `get_task_files`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskFilesArgs {
    /// Calling agent (defaults to the x-agent-id header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// A directory inside the task's working directory (default: all of it).
    #[schemars(length(max = 4096))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileEntryView {
    /// Path relative to the working directory.
    pub path: String,
    /// `file`, `dir` or `symlink`.
    pub kind: String,
    /// Size of a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Result of `get_task_files`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GetTaskFilesOutput {
    /// The task.
    pub task_id: String,
    /// Entries in path order (`.git` contents are not listed).
    pub entries: Vec<FileEntryView>,
    /// More than 1000 entries exist; list a subdirectory.
    pub truncated: bool,
}

/// Arguments of `read_task_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadTaskFileArgs {
    /// Calling agent (defaults to the x-agent-id header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// Path relative to the task's working directory.
    #[schemars(length(min = 1, max = 4096))]
    pub file_path: String,
    /// Byte offset to start at (default 0).
    #[schemars(range(min = 0))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Bytes to read (default 65536, at most 1048576).
    #[schemars(range(min = 1, max = 1_048_576))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// Result of `read_task_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadTaskFileOutput {
    /// Path relative to the working directory.
    pub path: String,
    /// Full file size.
    pub size: u64,
    /// Where this chunk starts.
    pub offset: u64,
    /// Bytes in this chunk.
    pub bytes_read: u64,
    /// The text (absent for binary files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The file is binary; no content is returned.
    pub binary: bool,
    /// Read again from `offset + bytes_read` for the rest.
    pub has_more: bool,
}

tool_call! {
    GetTaskFilesArgs => names::GET_TASK_FILES, GetTaskFilesOutput;
    ReadTaskFileArgs => names::READ_TASK_FILE, ReadTaskFileOutput;
}
