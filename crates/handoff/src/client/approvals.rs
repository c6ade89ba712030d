//! `handoff approvals`: the permission requests waiting for the caller (its tasks in
//! `input_required` and their pending input), and the standing approvals it gave.

use super::terminal::outln;
use handoff_protocol::{
    TaskId, TaskStatus,
    tasks::{GetTaskStatusArgs, ListApprovalsArgs, ListTasksArgs, PendingInputView},
};
use serde::Serialize;

use super::{ClientError, Exit, connection::Connection, render};
use crate::cli::ApprovalsArgs;

/// A request waiting for an answer, with its task.
#[derive(Debug, Serialize)]
struct Pending {
    task_id: String,
    description: String,
    #[serde(flatten)]
    request: PendingInputView,
}

/// Runs `handoff approvals`.
pub async fn approvals(conn: &Connection, args: &ApprovalsArgs) -> Result<Exit, ClientError> {
    let waiting = conn
        .call(&ListTasksArgs {
            status: Some(TaskStatus::InputRequired),
            limit: Some(200),
            ..ListTasksArgs::default()
        })
        .await?
        .value;
    let mut pending = Vec::new();
    for task in waiting.tasks {
        let id = TaskId::parse(&task.task_id)
            .map_err(|e| ClientError::BadReply(format!("list_tasks task_id: {e}")))?;
        let status = match conn
            .call(&GetTaskStatusArgs {
                agent_id: None,
                task_id: id,
            })
            .await
        {
            Ok(status) => status.value,
            // Answered (or ended) between the two calls: nothing waits any more.
            Err(e) if e.code() == Some(handoff_protocol::codes::NOT_FOUND) => continue,
            Err(e) => return Err(e),
        };
        pending.extend(status.pending_input.into_iter().map(|request| Pending {
            task_id: task.task_id.clone(),
            description: task.description.clone(),
            request,
        }));
    }
    let standing = conn.call(&ListApprovalsArgs::default()).await?;
    if args.json {
        render::print_json(&serde_json::json!({
            "pending": pending,
            "approvals": standing.raw["approvals"],
        }))?;
        return Ok(Exit::Ok);
    }
    print_pending(&pending);
    outln!();
    let rows: Vec<Vec<String>> = standing
        .value
        .approvals
        .iter()
        .map(|a| {
            vec![
                a.id.clone(),
                a.scope.as_str().to_owned(),
                a.permission.clone(),
                a.pattern.clone(),
                a.task_id.to_string(),
            ]
        })
        .collect();
    if rows.is_empty() {
        outln!("No standing approvals.");
    } else {
        outln!("Standing approvals:");
        let headers = ["ID", "SCOPE", "PERMISSION", "PATTERN", "GIVEN IN"];
        outln!("{}", render::table(&headers, &rows));
    }
    Ok(Exit::Ok)
}

fn print_pending(pending: &[Pending]) {
    if pending.is_empty() {
        outln!("No requests waiting for an answer.");
        return;
    }
    outln!("Waiting for an answer (handoff approve|deny TASK --request REQUEST):");
    let rows: Vec<Vec<String>> = pending
        .iter()
        .map(|p| {
            let what = if p.request.patterns.is_empty() {
                p.request.title.clone()
            } else {
                p.request.patterns.join(", ")
            };
            vec![
                p.task_id.clone(),
                p.request.request_id.clone(),
                format!("{} {}", p.request.kind, p.request.permission),
                render::one_line(&what, 80),
            ]
        })
        .collect();
    let headers = ["TASK", "REQUEST", "ASKS", "FOR"];
    outln!("{}", render::table(&headers, &rows));
}
