//! A task's changes and files: `handoff diff` and `handoff files`.

use super::terminal::{self, errln, outln};
use handoff_protocol::{
    ArtifactKind, TaskId,
    tasks::{GetTaskFilesArgs, GetTaskHistoryArgs, ReadTaskFileArgs, ReadTaskFileOutput},
};
use serde_json::json;

use super::{ClientError, Exit, connection::Connection, diffstat, render, task_id};
use crate::cli::{DiffArgs, FilesArgs};

/// `handoff diff ID [--stat | --json | --offset N]`: the diff kept of the task's changes:
/// all of it, read part by part (each part passes the server's output cap whole, so nothing is
/// cut), or one part and where the next starts.
pub async fn diff(conn: &Connection, args: &DiffArgs) -> Result<Exit, ClientError> {
    let id = task_id(&args.id)?;
    if args.stat || args.json {
        return diff_summary(conn, args, id).await;
    }
    let mut offset = args.offset.unwrap_or(0);
    loop {
        let history = conn.call(&part_args(&id, offset)).await?.value;
        let status = history.task.status;
        let Some(part) = history.artifacts.unwrap_or_default().into_iter().next() else {
            errln!(
                "no diff kept for {} ({status}): a diff is kept when a task ends",
                args.id
            );
            return Ok(Exit::Ok);
        };
        if !terminal::write_content(&part.content) {
            return Ok(Exit::Ok);
        }
        match part.next_offset {
            Some(next) if args.offset.is_none() && next > offset => offset = next,
            Some(next) => {
                errln!(
                    "(bytes {offset}–{next} of {}; the next part: handoff diff {} --offset {next})",
                    part.size,
                    args.id
                );
                return Ok(Exit::Ok);
            }
            None => {
                if part.capped {
                    errln!(
                        "(the executor produced more than the server keeps: the diff's end is missing)"
                    );
                }
                return Ok(Exit::Ok);
            }
        }
    }
}

/// The call reading the part of `id`'s diff from byte `offset`.
fn part_args(id: &TaskId, offset: u64) -> GetTaskHistoryArgs {
    GetTaskHistoryArgs {
        agent_id: None,
        task_id: id.clone(),
        events_offset: None,
        events_limit: None,
        include_artifacts: None,
        artifact: Some(ArtifactKind::Diff),
        artifact_offset: Some(offset),
    }
}

/// `--stat` and `--json`: the stat the server counts over the whole diff (with `--json`, the
/// diff's first 64 KiB as the server shows them).
async fn diff_summary(conn: &Connection, args: &DiffArgs, id: TaskId) -> Result<Exit, ClientError> {
    let args_history = GetTaskHistoryArgs {
        agent_id: None,
        task_id: id,
        events_offset: None,
        events_limit: Some(1),
        include_artifacts: Some(true),
        artifact: None,
        artifact_offset: None,
    };
    let history = conn.call(&args_history).await?.value;
    let artifact = history
        .artifacts
        .unwrap_or_default()
        .into_iter()
        .find(|a| a.kind == ArtifactKind::Diff);
    if args.json {
        let stat = artifact.as_ref().map(diffstat::of);
        render::print_json(&json!({"task_id": args.id, "diff": artifact, "stat": stat}))?;
        return Ok(Exit::Ok);
    }
    match artifact {
        Some(artifact) => outln!("{}", diffstat::render(&diffstat::of(&artifact))),
        None => errln!(
            "no diff kept for {} ({}): a diff is kept when a task ends",
            args.id,
            history.task.status
        ),
    }
    Ok(Exit::Ok)
}

/// `handoff files ID [PATH]`: a listing, or a file's content when PATH is a file.
pub async fn files(conn: &Connection, args: &FilesArgs) -> Result<Exit, ClientError> {
    let id = task_id(&args.id)?;
    if let Some(path) = &args.path {
        match read_whole(conn, &id, path).await {
            Ok(file) => return print_file(&file, args.json),
            // A directory: list it below.
            Err(e) if is_not_a_file(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let listing = conn
        .call(&GetTaskFilesArgs {
            agent_id: None,
            task_id: id,
            path: args.path.clone(),
        })
        .await?;
    if args.json {
        render::print_json(&listing.raw)?;
        return Ok(Exit::Ok);
    }
    for entry in &listing.value.entries {
        match (entry.kind.as_str(), entry.size) {
            ("dir", _) => outln!("{}/", entry.path),
            (_, Some(size)) => outln!("{}  ({size} bytes)", entry.path),
            _ => outln!("{}", entry.path),
        }
    }
    if listing.value.truncated {
        errln!("(more than 1000 entries: list a subdirectory)");
    }
    Ok(Exit::Ok)
}

fn is_not_a_file(error: &ClientError) -> bool {
    matches!(error, ClientError::Tool { body: Some(b), .. }
        if b.pointer.as_deref() == Some("/file_path") && b.message.contains("not a file"))
}

/// Reads all of a file, chunk by chunk.
async fn read_whole(
    conn: &Connection,
    id: &TaskId,
    path: &str,
) -> Result<ReadTaskFileOutput, ClientError> {
    let mut whole: Option<ReadTaskFileOutput> = None;
    loop {
        let offset = whole.as_ref().map_or(0, |w| w.bytes_read);
        let chunk = conn
            .call(&ReadTaskFileArgs {
                agent_id: None,
                task_id: id.clone(),
                file_path: path.to_owned(),
                offset: Some(offset),
                max_bytes: Some(1 << 20),
            })
            .await?
            .value;
        let more = chunk.has_more && chunk.bytes_read > 0 && !chunk.binary;
        whole = Some(match whole {
            None => chunk,
            Some(mut w) => {
                w.bytes_read += chunk.bytes_read;
                w.content = match (w.content, chunk.content) {
                    (Some(a), Some(b)) => Some(a + &b),
                    (a, b) => a.or(b),
                };
                w.has_more = chunk.has_more;
                w
            }
        });
        if !more {
            break;
        }
    }
    whole.ok_or_else(|| ClientError::BadReply("read_task_file returned nothing".to_owned()))
}

fn print_file(file: &ReadTaskFileOutput, json: bool) -> Result<Exit, ClientError> {
    if json {
        render::print_json(file)?;
        return Ok(Exit::Ok);
    }
    match &file.content {
        Some(content) if !file.binary => terminal::print_content(content),
        _ => errln!("{} is binary ({} bytes); not shown", file.path, file.size),
    }
    Ok(Exit::Ok)
}
