//! Reading a task's working directory without ever leaving it.

use std::{
    io::SeekFrom,
    path::{Component, Path, PathBuf},
};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::EngineError;

/// Entries listed per call at most.
const MAX_ENTRIES: usize = 1000;
/// Largest chunk `read_task_file` returns.
pub(crate) const MAX_READ_BYTES: u64 = 1 << 20;
/// Chunk size when the caller gives none.
pub(crate) const DEFAULT_READ_BYTES: u64 = 64 << 10;

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the task directory.
    pub path: String,
    /// Entry type.
    pub kind: FileKind,
    /// Size in bytes (files only).
    pub size: Option<u64>,
}

/// A recursive listing of (part of) a task directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileListing {
    /// Entries, in path order.
    pub entries: Vec<FileEntry>,
    /// More entries exist than were listed.
    pub truncated: bool,
}

/// A slice of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChunk {
    /// Path relative to the task directory.
    pub path: String,
    /// Full file size.
    pub size: u64,
    /// Where this chunk starts.
    pub offset: u64,
    /// The text (absent for binary files).
    pub content: Option<String>,
    /// Bytes returned.
    pub bytes_read: u64,
    /// The file looks binary (NUL bytes or invalid UTF-8); no content is returned.
    pub binary: bool,
    /// Bytes remain after this chunk.
    pub has_more: bool,
}

/// Resolves `relative` inside `root`, refusing absolute paths, `..`, and anything (such as a
/// symlink) that resolves outside the root.
pub(crate) fn confine(root: &Path, relative: &str) -> Result<PathBuf, EngineError> {
    let rel = Path::new(relative);
    if rel.is_absolute() {
        return Err(EngineError::invalid(
            "file_path",
            "must be relative to the task's working directory",
        ));
    }
    if rel.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::Prefix(_) | Component::RootDir
        )
    }) {
        return Err(EngineError::invalid("file_path", "must not contain `..`"));
    }
    let root = root
        .canonicalize()
        .map_err(|e| EngineError::Conflict(format!("the task's working directory is gone: {e}")))?;
    let resolved = root.join(rel).canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => EngineError::NotFound(format!("file {relative}")),
        _ => EngineError::invalid("file_path", format!("{relative}: {e}")),
    })?;
    if !resolved.starts_with(&root) {
        return Err(EngineError::invalid(
            "file_path",
            format!("{relative} resolves outside the task's working directory"),
        ));
    }
    Ok(resolved)
}

/// Lists `dir` (inside `root`) recursively without following symlinks.
pub(crate) async fn list(root: &Path, relative: Option<&str>) -> Result<FileListing, EngineError> {
    let base = root
        .canonicalize()
        .map_err(|e| EngineError::Conflict(format!("the task's working directory is gone: {e}")))?;
    let start = match relative {
        Some(rel) if !rel.is_empty() && rel != "." => confine(&base, rel)?,
        _ => base.clone(),
    };
    let mut entries = Vec::new();
    let mut truncated = false;
    let mut pending = vec![start];
    while let Some(dir) = pending.pop() {
        let mut reader = tokio::fs::read_dir(&dir)
            .await
            .map_err(|e| EngineError::invalid("path", format!("not a readable directory: {e}")))?;
        while let Some(entry) = reader
            .next_entry()
            .await
            .map_err(|e| EngineError::io("listing task files", e))?
        {
            if entries.len() >= MAX_ENTRIES {
                truncated = true;
                break;
            }
            let Ok(meta) = tokio::fs::symlink_metadata(entry.path()).await else {
                continue;
            };
            let path = entry.path();
            let shown = path
                .strip_prefix(&base)
                .unwrap_or(&path)
                .display()
                .to_string();
            let kind = if meta.file_type().is_symlink() {
                FileKind::Symlink
            } else if meta.is_dir() {
                FileKind::Dir
            } else {
                FileKind::File
            };
            // VCS internals are noise to the agent reading results.
            if kind == FileKind::Dir && entry.file_name() != ".git" {
                pending.push(path.clone());
            }
            entries.push(FileEntry {
                path: shown,
                kind,
                size: (kind == FileKind::File).then_some(meta.len()),
            });
        }
        if truncated {
            break;
        }
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(FileListing { entries, truncated })
}

/// Reads at most `max_bytes` of `relative` from `offset`, checking the size before reading.
pub(crate) async fn read(
    root: &Path,
    relative: &str,
    offset: u64,
    max_bytes: u64,
) -> Result<FileChunk, EngineError> {
    let path = confine(root, relative)?;
    let meta = tokio::fs::metadata(&path)
        .await
        .map_err(|e| EngineError::io(format!("reading {relative}"), e))?;
    if !meta.is_file() {
        return Err(EngineError::invalid(
            "file_path",
            format!("{relative} is not a file"),
        ));
    }
    let size = meta.len();
    let want = max_bytes
        .min(MAX_READ_BYTES)
        .min(size.saturating_sub(offset));
    let mut buf = vec![0u8; usize::try_from(want).unwrap_or(0)];
    if want > 0 {
        let mut file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| EngineError::io(format!("opening {relative}"), e))?;
        file.seek(SeekFrom::Start(offset))
            .await
            .map_err(|e| EngineError::io(format!("seeking {relative}"), e))?;
        file.read_exact(&mut buf)
            .await
            .map_err(|e| EngineError::io(format!("reading {relative}"), e))?;
    }
    let (content, kept, binary) = decode(&buf);
    Ok(FileChunk {
        path: relative.to_owned(),
        size,
        offset,
        bytes_read: kept,
        has_more: offset.saturating_add(kept) < size,
        content,
        binary,
    })
}

/// Text or binary? A chunk may end inside a multi-byte character: that tail is left for the
/// next read rather than mangled.
fn decode(buf: &[u8]) -> (Option<String>, u64, bool) {
    if buf.contains(&0) {
        return (None, buf.len() as u64, true);
    }
    match std::str::from_utf8(buf) {
        Ok(text) => (Some(text.to_owned()), buf.len() as u64, false),
        Err(e) if e.error_len().is_none() => {
            let valid = &buf[..e.valid_up_to()];
            (
                Some(String::from_utf8_lossy(valid).into_owned()),
                valid.len() as u64,
                false,
            )
        }
        Err(_) => (None, buf.len() as u64, true),
    }
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
