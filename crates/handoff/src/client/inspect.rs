//! Reading tasks: `handoff tasks` and `handoff show`.

use super::terminal::{errln, outln};
use handoff_protocol::{
    TaskStatus, TaskView,
    tasks::{GetTaskStatusArgs, GetTaskStatusOutput, ListTasksArgs, ListTasksOutput},
};

use super::{ClientError, Exit, connection::Connection, render, task_id};
use crate::cli::{ShowArgs, TasksArgs};

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
    let (tasks, next) = pages(conn, args, status).await?;
    if args.json {
        let page = ListTasksOutput {
            tasks,
            next_cursor: next,
        };
        render::print_json(&page)?;
        return Ok(Exit::Ok);
    }
    if tasks.is_empty() {
        errln!("no tasks");
        return Ok(Exit::Ok);
    }
    let rows: Vec<Vec<String>> = tasks
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
    outln!("{}", render::table(&headers, &rows));
    if let Some(cursor) = next {
        errln!("(more tasks: `handoff tasks --cursor {cursor}`, or --all)");
    }
    Ok(Exit::Ok)
}

/// The page `args` ask for, or with `--all` every page; the tasks and where the next page
/// would start.
async fn pages(
    conn: &Connection,
    args: &TasksArgs,
    status: Option<TaskStatus>,
) -> Result<(Vec<TaskView>, Option<String>), ClientError> {
    let mut tasks = Vec::new();
    let mut cursor = args.cursor.clone();
    loop {
        let list = ListTasksArgs {
            status,
            limit: Some(args.limit.clamp(1, 200)),
            cursor: cursor.take(),
            ..ListTasksArgs::default()
        };
        let page = conn.call(&list).await?.value;
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) if args.all => cursor = Some(next),
            next => return Ok((tasks, next)),
        }
    }
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

/// The last delivery step in one line: its state, the remote, and what went wrong or the
/// after-push command's last line (a pull request's URL).
fn delivery_line(delivery: &serde_json::Value) -> String {
    let state = delivery["state"].as_str().unwrap_or("unknown");
    let remote = delivery["remote"].as_str().unwrap_or_default();
    let detail = delivery["error"].as_str().or_else(|| {
        delivery["hook_output"]
            .as_array()
            .and_then(|lines| lines.last())
            .and_then(|l| l.as_str())
    });
    match detail {
        Some(detail) => format!("{state} ({remote}): {}", render::one_line(detail, 200)),
        None => format!("{state} ({remote})"),
    }
}

fn print_status(status: &GetTaskStatusOutput) {
    let task = &status.task;
    let field = |name: &str, value: &str| outln!("{name:<11} {value}");
    field("task", &task.task_id);
    field("status", task.status.as_str());
    field("executor", &task.executor);
    field("workdir", &task.workdir);
    if let Some(branch) = &task.branch {
        field("branch", branch);
    }
    if let Some(round) = task.round {
        field("round", &round.to_string());
    }
    if let Some(delivery) = &status.delivery {
        field("delivery", &delivery_line(delivery));
    }
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
    if let Some(usage) = &status.model_usage {
        field("model usage", &usage.summary());
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
        outln!(
            "waiting     [{}] {} {}: {}",
            request.request_id,
            request.kind,
            request.permission,
            request.patterns.join(", ")
        );
        outln!(
            "            answer with `handoff approve {id} --request {r}` or `handoff deny {id} \
             --request {r}`",
            id = task.task_id,
            r = request.request_id
        );
    }
    if let Some(answer) = &status.answer {
        outln!("\n{}", answer.trim_end());
    }
}
