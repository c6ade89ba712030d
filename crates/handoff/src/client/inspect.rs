//! Reading tasks: `handoff tasks`, `show`, `logs`, `diff`, `files`.

use handoff_protocol::{
    ArtifactKind, TaskStatus,
    tasks::{
        GetTaskFilesArgs, GetTaskHistoryArgs, GetTaskHistoryOutput, GetTaskStatusArgs,
        GetTaskStatusOutput, ListTasksArgs, ReadTaskFileArgs, ReadTaskFileOutput,
    },
};
use serde_json::json;

use super::{
    ClientError, Exit,
    connection::Connection,
    diffstat,
    follow::{Followed, Follower, LiveSink, follow},
    render, task_id,
};
use crate::cli::{DiffArgs, FilesArgs, LogsArgs, ShowArgs, TasksArgs};

/// `handoff tasks`: a table of the caller's tasks, newest first.
pub async fn tasks(conn: &Connection, args: &TasksArgs) -> Result<Exit, ClientError> {
    let status = args
        .status
        .as_deref()
        .map(str::parse::<TaskStatus>)
        .transpose()
        .map_err(|e| {
            let names: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
            ClientError::Usage(format!(
                "--status: {e}; expected one of {}",
                names.join(", ")
            ))
        })?;
    let list = ListTasksArgs {
        status,
        limit: Some(args.limit.clamp(1, 200)),
        ..ListTasksArgs::default()
    };
    let reply = conn.call(&list).await?;
    if args.json {
        render::print_json(&reply.raw)?;
        return Ok(Exit::Ok);
    }
    if reply.value.tasks.is_empty() {
        eprintln!("no tasks");
        return Ok(Exit::Ok);
    }
    let rows: Vec<Vec<String>> = reply
        .value
        .tasks
        .iter()
        .map(|t| {
            vec![
                t.task_id.clone(),
                t.status.to_string(),
                t.executor.clone(),
                render::ago(t.created_at_ms),
                t.duration_ms.map(render::duration).unwrap_or_default(),
                render::one_line(&t.description, 60),
            ]
        })
        .collect();
    let headers = [
        "ID",
        "STATUS",
        "EXECUTOR",
        "CREATED",
        "DURATION",
        "DESCRIPTION",
    ];
    println!("{}", render::table(&headers, &rows));
    if reply.value.next_cursor.is_some() {
        eprintln!("(more tasks: raise --limit, at most 200)");
    }
    Ok(Exit::Ok)
}

/// `handoff show ID`: where one task stands.
pub async fn show(conn: &Connection, args: &ShowArgs) -> Result<Exit, ClientError> {
    let reply = conn
        .call(&GetTaskStatusArgs {
            agent_id: None,
            task_id: task_id(&args.id)?,
        })
        .await?;
    if args.json {
        render::print_json(&reply.raw)?;
    } else {
        print_status(&reply.value);
    }
    Ok(Exit::Ok)
}

fn print_status(status: &GetTaskStatusOutput) {
    let task = &status.task;
    let field = |name: &str, value: &str| println!("{name:<11} {value}");
    field("task", &task.task_id);
    field("status", task.status.as_str());
    field("executor", &task.executor);
    field("workdir", &task.workdir);
    field("created", &render::ago(task.created_at_ms));
    if let Some(ms) = task.duration_ms {
        field("duration", &render::duration(ms));
    }
    if let Some(position) = status.queue_position {
        field("queue", &format!("position {position}"));
    }
    if let Some(exit) = &task.exit {
        let how = match (exit.code, exit.signal) {
            (Some(code), _) => format!("code {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "unknown".to_owned(),
        };
        field("exit", &how);
    }
    if let Some(error) = &task.error {
        field("error", error);
    }
    if let Some(tool) = &status.last_tool_call {
        field("doing", tool);
    }
    if let Some(verdict) = status
        .completion
        .as_ref()
        .and_then(|c| c["status"].as_str())
    {
        field("verdict", verdict);
    }
    field("description", &render::one_line(&task.description, 200));
    for request in &status.pending_input {
        println!(
            "waiting     [{}] {} {}: {}",
            request.request_id,
            request.kind,
            request.permission,
            request.patterns.join(", ")
        );
        println!(
            "            answer with `handoff approve {id} --request {r}` or `handoff deny {id} \
             --request {r}`",
            id = task.task_id,
            r = request.request_id
        );
    }
    if let Some(answer) = &status.answer {
        println!("\n{}", answer.trim_end());
    }
}

/// `handoff logs ID [-f]`: every event; with `-f`, new ones until the task ends.
pub async fn logs(conn: &Connection, args: &LogsArgs) -> Result<Exit, ClientError> {
    let mut follower = Follower::new(task_id(&args.id)?);
    if args.follow {
        return follow_logs(conn, follower, args.json).await;
    }
    let (task, events) = follower.poll(conn).await?;
    if args.json {
        let whole = GetTaskHistoryOutput {
            task,
            total_events: events.len() as u64,
            events,
            events_offset: 0,
            has_more: false,
            artifacts: None,
        };
        render::print_json(&whole)?;
        return Ok(Exit::Ok);
    }
    for event in &events {
        println!("{}", render::event_line(event, task.created_at_ms));
    }
    Ok(Exit::Ok)
}

/// `logs -f`: lines above a progress line, or with `--json` one event per line.
async fn follow_logs(
    conn: &Connection,
    mut follower: Follower,
    json: bool,
) -> Result<Exit, ClientError> {
    if json {
        let mut sink = JsonLines;
        return match follow(conn, &mut follower, &mut sink, ctrl_c()).await? {
            Followed::Ended(_) => Ok(Exit::Ok),
            Followed::Interrupted => Ok(Exit::Detached),
        };
    }
    let mut sink = LiveSink::new(follower.id().as_str(), false);
    let followed = follow(conn, &mut follower, &mut sink, ctrl_c()).await?;
    sink.finish();
    match followed {
        Followed::Ended(task) => {
            println!("{}", render::outcome_line(&task));
            Ok(Exit::Ok)
        }
        Followed::Interrupted => Ok(Exit::Detached),
    }
}

/// Completes on Ctrl-C (never, when no handler can be installed).
async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Prints each event as one JSON line.
struct JsonLines;

impl super::follow::Sink for JsonLines {
    fn update(
        &mut self,
        _task: &handoff_protocol::TaskView,
        events: &[handoff_protocol::EventView],
    ) {
        for event in events {
            if let Ok(line) = serde_json::to_string(event) {
                println!("{line}");
            }
        }
    }
}

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
        let stat = artifact.as_ref().map(|a| {
            diffstat::stat(&a.content)
                .into_iter()
                .map(|f| json!({"path": f.path, "added": f.added, "removed": f.removed, "binary": f.binary}))
                .collect::<Vec<_>>()
        });
        render::print_json(&json!({"task_id": args.id, "diff": artifact, "stat": stat}))?;
        return Ok(Exit::Ok);
    }
    let Some(artifact) = artifact else {
        eprintln!(
            "no diff kept for {} ({}): a diff is kept when a task ends",
            args.id, history.task.status
        );
        return Ok(Exit::Ok);
    };
    if args.stat {
        println!("{}", diffstat::render(&diffstat::stat(&artifact.content)));
    } else {
        print!("{}", artifact.content);
    }
    if artifact.truncated {
        eprintln!(
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
            ("dir", _) => println!("{}/", entry.path),
            (_, Some(size)) => println!("{}  ({size} bytes)", entry.path),
            _ => println!("{}", entry.path),
        }
    }
    if listing.value.truncated {
        eprintln!("(more than 1000 entries: list a subdirectory)");
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
    id: &handoff_protocol::TaskId,
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
        Some(content) if !file.binary => print!("{content}"),
        _ => eprintln!("{} is binary ({} bytes); not shown", file.path, file.size),
    }
    Ok(Exit::Ok)
}
