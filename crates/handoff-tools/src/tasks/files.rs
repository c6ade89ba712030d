use handoff_engine::{Engine, FileChunk, FileEntry, FileKind};
use handoff_protocol::{
    names,
    tasks::{
        FileEntryView, GetTaskFilesArgs, GetTaskFilesOutput, ReadTaskFileArgs, ReadTaskFileOutput,
    },
};

use super::{caller, failure::tool_error, text};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

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
        names::GET_TASK_FILES
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
        ctx: ToolContext,
        args: GetTaskFilesArgs,
    ) -> Result<Reply<GetTaskFilesOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
        let listing = self
            .engine
            .files(&agent, &args.task_id, args.path.as_deref())
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let output = GetTaskFilesOutput {
            task_id: args.task_id.to_string(),
            entries: listing.entries.iter().map(entry_view).collect(),
            truncated: listing.truncated,
        };
        let text = text::file_listing(&output, args.path.as_deref());
        Ok(Reply::new(output, text))
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
        names::READ_TASK_FILE
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
        ctx: ToolContext,
        args: ReadTaskFileArgs,
    ) -> Result<Reply<ReadTaskFileOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
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
        let output = chunk_output(chunk);
        let text = text::file_chunk(&output, args.task_id.as_str());
        Ok(Reply::new(output, text))
    }
}

/// A listing entry as shown.
fn entry_view(entry: &FileEntry) -> FileEntryView {
    FileEntryView {
        path: entry.path.clone(),
        kind: match entry.kind {
            FileKind::File => "file",
            FileKind::Dir => "dir",
            FileKind::Symlink => "symlink",
        }
        .to_owned(),
        size: entry.size,
    }
}

/// A chunk read as returned.
fn chunk_output(chunk: FileChunk) -> ReadTaskFileOutput {
    ReadTaskFileOutput {
        path: chunk.path,
        size: chunk.size,
        offset: chunk.offset,
        bytes_read: chunk.bytes_read,
        content: chunk.content,
        binary: chunk.binary,
        has_more: chunk.has_more,
    }
}
