//! A task's files: a listing, and a chunk of one file with where the next chunk starts.

use handoff_protocol::tasks::{FileEntryView, GetTaskFilesOutput, ReadTaskFileOutput};
use serde_json::json;

use crate::wording::{call, count, head_bytes, size};

/// Entries listed at most.
const ENTRIES_SHOWN: usize = 40;
/// Bytes of a file's text shown at most; the rest is one call away.
pub(crate) const FILE_TEXT_BYTES: usize = 8 * 1024;

/// `get_task_files`: the entries, and how to list a part or read a file.
pub(crate) fn file_listing(out: &GetTaskFilesOutput, path: Option<&str>) -> String {
    let id = &out.task_id;
    let place = match path.filter(|p| !p.is_empty() && *p != ".") {
        Some(path) => format!("{path} in task {id}'s working directory"),
        None => format!("Task {id}'s working directory"),
    };
    if out.entries.is_empty() {
        return format!("{place} is empty.");
    }
    let dirs = out.entries.iter().filter(|e| e.kind == "dir").count();
    let files = out.entries.iter().filter(|e| e.kind == "file").count();
    let mut lines = vec![format!(
        "{place}: {} ({}, {}):",
        count(out.entries.len(), "entry", "entries"),
        count(dirs, "directory", "directories"),
        count(files, "file", "files"),
    )];
    lines.extend(out.entries.iter().take(ENTRIES_SHOWN).map(entry_line));
    if out.entries.len() > ENTRIES_SHOWN || out.truncated {
        let more = if out.truncated {
            "More than 1000 entries exist".to_owned()
        } else {
            format!("Showing {ENTRIES_SHOWN} of {}", out.entries.len())
        };
        let subdir = out
            .entries
            .iter()
            .find(|e| e.kind == "dir")
            .map_or("src", |e| e.path.as_str());
        let list = call("get_task_files", json!({ "task_id": id, "path": subdir }));
        lines.push(format!("{more}; list a subdirectory: {list}."));
    }
    if let Some(file) = out.entries.iter().find(|e| e.kind == "file") {
        let read = call(
            "read_task_file",
            json!({ "task_id": id, "file_path": file.path }),
        );
        lines.push(format!("Read a file: {read}."));
    }
    lines.join("\n")
}

/// `src/`, `src/lib.rs (1.2 KiB)`, `link (symlink)`.
fn entry_line(entry: &FileEntryView) -> String {
    match entry.kind.as_str() {
        "dir" => format!("{}/", entry.path),
        "file" => format!("{} ({})", entry.path, size(entry.size.unwrap_or(0))),
        kind => format!("{} ({kind})", entry.path),
    }
}

/// `read_task_file`: which part of the file this is, where the rest starts, then the text.
pub(crate) fn file_chunk(out: &ReadTaskFileOutput, task_id: &str) -> String {
    let path = &out.path;
    if out.binary {
        return format!(
            "{path} is a binary file of {}; its content is not shown.",
            size(out.size)
        );
    }
    let content = out.content.as_deref().unwrap_or_default();
    if out.size == 0 {
        return format!("{path} is empty.");
    }
    let shown = head_bytes(content, FILE_TEXT_BYTES);
    let end = out.offset + shown.len() as u64;
    let header = if out.offset == 0 && end >= out.size {
        format!("{path} ({}), whole file:", size(out.size))
    } else if end >= out.size {
        format!(
            "{path}: the last {} bytes, from offset {} of {}:",
            shown.len(),
            out.offset,
            out.size
        )
    } else {
        let rest = call(
            "read_task_file",
            json!({ "task_id": task_id, "file_path": path, "offset": end }),
        );
        format!(
            "{path}: {} bytes from offset {} of {}. The rest: {rest}.",
            shown.len(),
            out.offset,
            out.size
        )
    };
    format!("{header}\n{shown}")
}
