use handoff_engine::{Engine, FileChunk, FileEntry};
use handoff_task::TaskId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{caller, failure::tool_error};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// Arguments of `get_task_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskFilesArgs {
    /// Calling agent (defaults to the x-agent-id header).
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// A directory inside the task's working directory (default: all of it).
    #[schemars(length(max = 4096))]
    pub path: Option<String>,
}

/// One entry of a listing.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileEntryView {
    /// Path relative to the working directory.
    pub path: String,
    /// `file`, `dir` or `symlink`.
    pub kind: String,
    /// Size of a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl From<&FileEntry> for FileEntryView {
    fn from(entry: &FileEntry) -> Self {
        Self {
            path: entry.path.clone(),
            kind: match entry.kind {
                handoff_engine::FileKind::File => "file",
                handoff_engine::FileKind::Dir => "dir",
                handoff_engine::FileKind::Symlink => "symlink",
            }
            .to_owned(),
            size: entry.size,
        }
    }
}

/// Result of `get_task_files`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GetTaskFilesOutput {
    /// The task.
    pub task_id: String,
    /// Entries in path order (`.git` contents are not listed).
    pub entries: Vec<FileEntryView>,
    /// More than 1000 entries exist; list a subdirectory.
    pub truncated: bool,
}

/// `get_task_files`: what is in a task's working directory.
pub struct GetTaskFilesTool {
    engine: Engine,
}

impl GetTaskFilesTool {
    /// A tool reading through `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for GetTaskFilesTool {
    type Args = GetTaskFilesArgs;
    type Output = GetTaskFilesOutput;

    fn name(&self) -> &'static str {
        "get_task_files"
    }

    fn description(&self) -> &'static str {
        "List the files in one of your tasks' working directory (recursively, up to 1000 \
         entries), or in a subdirectory of it. Read a file with read_task_file."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        _ctx: ToolContext,
        args: GetTaskFilesArgs,
    ) -> Result<GetTaskFilesOutput, ToolError> {
        let agent = caller(self.name(), args.agent_id)?;
        let listing = self
            .engine
            .files(&agent, &args.task_id, args.path.as_deref())
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        Ok(GetTaskFilesOutput {
            task_id: args.task_id.to_string(),
            entries: listing.entries.iter().map(FileEntryView::from).collect(),
            truncated: listing.truncated,
        })
    }
}

/// Arguments of `read_task_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadTaskFileArgs {
    /// Calling agent (defaults to the x-agent-id header).
    pub agent_id: Option<AgentId>,
    /// The task.
    pub task_id: TaskId,
    /// Path relative to the task's working directory.
    #[schemars(length(min = 1, max = 4096))]
    pub file_path: String,
    /// Byte offset to start at (default 0).
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// Bytes to read (default 65536, at most 1048576).
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_bytes: Option<u64>,
}

/// Result of `read_task_file`.
#[derive(Debug, Serialize, JsonSchema)]
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

impl From<FileChunk> for ReadTaskFileOutput {
    fn from(chunk: FileChunk) -> Self {
        Self {
            path: chunk.path,
            size: chunk.size,
            offset: chunk.offset,
            bytes_read: chunk.bytes_read,
            content: chunk.content,
            binary: chunk.binary,
            has_more: chunk.has_more,
        }
    }
}

/// `read_task_file`: reads (part of) a file a task produced.
pub struct ReadTaskFileTool {
    engine: Engine,
}

impl ReadTaskFileTool {
    /// A tool reading through `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for ReadTaskFileTool {
    type Args = ReadTaskFileArgs;
    type Output = ReadTaskFileOutput;

    fn name(&self) -> &'static str {
        "read_task_file"
    }

    fn description(&self) -> &'static str {
        "Read a text file from one of your tasks' working directory, in chunks of up to 1 MiB \
         (offset/max_bytes). Paths are relative to that directory and cannot leave it; binary \
         files are reported, not returned."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        _ctx: ToolContext,
        args: ReadTaskFileArgs,
    ) -> Result<ReadTaskFileOutput, ToolError> {
        let agent = caller(self.name(), args.agent_id)?;
        let chunk = self
            .engine
            .read_file(
                &agent,
                &args.task_id,
                &args.file_path,
                args.offset.unwrap_or(0),
                args.max_bytes,
            )
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        Ok(chunk.into())
    }
}
