//! A task's changes and files: `handoff diff` and `handoff files`.

use super::terminal::{self, errln, outln};
use handoff_protocol::{
    ArtifactKind, TaskId,
    tasks::{GetTaskFilesArgs, GetTaskHistoryArgs, ReadTaskFileArgs, ReadTaskFileOutput},
};
use serde_json::json;

use super::{ClientError, Exit, connection::Connection, diffstat, render, task_id};
use crate::cli::{DiffArgs, FilesArgs};

/// `handoff diff ID [--stat]`: the diff kept of the task's changes.
pub async fn diff(conn: &Connection, args: &DiffArgs) -> Result<Exit, ClientError> {
    let args_history = GetTaskHistoryArgs {
        agent_id: None,
        task_id: task_id(&args.id)?,
        events_offset: None,
        events_limit: Some(1),
        include_artifacts: Some(true),
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
    let Some(artifact) = artifact else {
        errln!(
            "no diff kept for {} ({}): a diff is kept when a task ends",
            args.id,
            history.task.status
        );
        return Ok(Exit::Ok);
    };
    if args.stat {
        outln!("{}", diffstat::render(&diffstat::of(&artifact)));
    } else {
        terminal::print_content(&artifact.content);
    }
    if artifact.truncated {
        errln!(
            "(the diff is {} bytes; only its first {} are shown)",
            artifact.size,
            artifact.content.len()
        );
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
