//! `handoff run`: submit a task (retrying a refusal Handoff says to retry) and, unless
//! `--no-wait`, follow it to its end — whatever stdout is, so a script gets the outcome as the
//! exit code: events, the agent's final answer, the diff stat. Ctrl-C on a terminal
//! asks whether to cancel the task or detach; elsewhere it detaches.

use super::terminal::{err, errln, outln};
use std::{
    io::{BufRead, IsTerminal, Write},
    time::{Duration, Instant},
};

use handoff_protocol::{
    ArtifactKind, TaskId, TaskStatus,
    codes::is_retryable,
    tasks::{
        ArtifactView, ControlAction, ExecuteTaskArgs, ExecuteTaskOutput, GetTaskHistoryArgs,
        GetTaskStatusArgs, SendTaskControlArgs,
    },
};

use super::{
    ClientError, Exit,
    connection::{Connection, Reply},
    diffstat,
    follow::{Followed, Follower, LiveSink, ctrl_c, follow},
    render,
};
use crate::cli::RunArgs;

/// Runs `handoff run`.
pub async fn run(conn: &Connection, args: &RunArgs) -> Result<Exit, ClientError> {
    let workdir = args.dir.as_deref().map(absolute).transpose()?;
    let continued = args
        .continue_task
        .as_deref()
        .map(|id| TaskId::parse(id).map_err(|e| ClientError::Usage(format!("--continue: {e}"))))
        .transpose()?;
    // A follow-up round is followed from its own first event on.
    let seen = match &continued {
        Some(id) => events_so_far(conn, id).await?,
        None => 0,
    };
    let submit = ExecuteTaskArgs {
        task_description: args.text.clone(),
        executor: args.executor.clone(),
        workdir,
        observers: (!args.observers.is_empty()).then(|| args.observers.clone()),
        requeue_on_restart: args.requeue_on_restart.then_some(true),
        continue_task: continued,
        ..ExecuteTaskArgs::default()
    };
    let submitted = submit_patiently(conn, &submit).await?;
    let task = &submitted.value;
    if args.no_wait {
        if args.json {
            render::print_json(&submitted.raw)?;
        } else {
            // A directory the caller did not choose is settled when the task starts (a task
            // may move into the directory of an agent started ahead of it).
            match &args.dir {
                Some(_) => outln!(
                    "{} {} ({}, in {})",
                    task.task_id,
                    task.status,
                    task.executor,
                    task.workdir
                ),
                None => outln!("{} {} ({})", task.task_id, task.status, task.executor),
            }
            errln!("follow it with `handoff logs {} -f`", task.task_id);
        }
        return Ok(Exit::Ok);
    }
    let id = TaskId::parse(&task.task_id)
        .map_err(|e| ClientError::BadReply(format!("execute_task task_id: {e}")))?;
    if !args.json {
        outln!("{} {} ({})", task.task_id, task.status, task.executor);
    }
    wait_for_end(conn, Follower::from_offset(id, seen), args.json).await
}

/// How many events task `id` has recorded so far.
async fn events_so_far(conn: &Connection, id: &TaskId) -> Result<u64, ClientError> {
    let history = conn
        .call(&GetTaskHistoryArgs {
            agent_id: None,
            task_id: id.clone(),
            events_offset: None,
            events_limit: Some(1),
            include_artifacts: None,
            artifact: None,
            artifact_offset: None,
        })
        .await?;
    Ok(history.value.total_events)
}

/// How long `run` keeps retrying a submission Handoff refused for its load (rate limit, full
/// queue, store unreachable) before it gives up with the refusal.
const SUBMIT_PATIENCE: Duration = Duration::from_secs(120);
/// The longest single wait between two attempts, whatever the server suggests.
const LONGEST_WAIT: Duration = Duration::from_secs(10);

/// Submits `args`; a refusal Handoff says to retry (`RATE_LIMITED`, `QUEUE_FULL`,
/// `UNAVAILABLE`) is retried after the `retry_after_ms` it names, for up to
/// [`SUBMIT_PATIENCE`]. Nothing else is retried.
async fn submit_patiently(
    conn: &Connection,
    args: &ExecuteTaskArgs,
) -> Result<Reply<ExecuteTaskOutput>, ClientError> {
    let started = Instant::now();
    let mut attempt: u32 = 0;
    loop {
        let result = conn.call(args).await;
        let retry_after_ms = match &result {
            Err(ClientError::Tool {
                body: Some(body), ..
            }) if is_retryable(&body.code) => body.retry_after_ms,
            _ => return result,
        };
        attempt += 1;
        let wait = retry_wait(retry_after_ms, attempt);
        if started.elapsed() + wait > SUBMIT_PATIENCE {
            return result;
        }
        tokio::time::sleep(wait).await;
    }
}

/// The wait before attempt `attempt + 1`: what the server asked, at least 50 ms and at most
/// [`LONGEST_WAIT`], plus up to half again so that many refused clients do not all come back
/// at the same instant.
fn retry_wait(retry_after_ms: Option<u64>, attempt: u32) -> Duration {
    let asked = Duration::from_millis(retry_after_ms.unwrap_or(1_000))
        .clamp(Duration::from_millis(50), LONGEST_WAIT);
    // Spread from the clock's nanoseconds and the process id: no generator needed for this.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let spread = (nanos ^ std::process::id().wrapping_mul(2_654_435_761) ^ attempt) % 1_000;
    asked + asked.mul_f64(f64::from(spread) / 2_000.0)
}

/// A directory as the absolute path the server needs.
fn absolute(dir: &std::path::Path) -> Result<String, ClientError> {
    let path = std::fs::canonicalize(dir)
        .map_err(|e| ClientError::Usage(format!("--dir {}: {e}", dir.display())))?;
    if !path.is_dir() {
        return Err(ClientError::Usage(format!(
            "--dir {}: not a directory",
            dir.display()
        )));
    }
    Ok(path.display().to_string())
}

/// Follows task `id` until it ends, or until the user detaches.
async fn wait_for_end(
    conn: &Connection,
    mut follower: Follower,
    json: bool,
) -> Result<Exit, ClientError> {
    let mut sink = LiveSink::new(follower.id().as_str(), json, false);
    let mut cancelling = false;
    let task = loop {
        match follow(conn, &mut follower, &mut sink, ctrl_c()).await? {
            Followed::Ended(task) => break task,
            Followed::Interrupted if !cancelling && sink.suspend(ask_cancel) => {
                cancelling = true;
                let said = cancel(conn, follower.id()).await?;
                sink.suspend(|| errln!("{said}"));
            }
            Followed::Interrupted => {
                sink.finish();
                errln!(
                    "detached from {id}; it goes on. Follow it with `handoff logs {id} -f`, stop \
                     it with `handoff cancel {id}`.",
                    id = follower.id()
                );
                return Ok(Exit::Detached);
            }
        }
    };
    sink.finish();
    let status = conn
        .call(&GetTaskStatusArgs {
            agent_id: None,
            task_id: follower.id().clone(),
        })
        .await?;
    let exit = if task.status == TaskStatus::Completed {
        Exit::Ok
    } else {
        Exit::NotCompleted
    };
    if json {
        render::print_json(&status.raw)?;
        return Ok(exit);
    }
    outln!("{}", render::outcome_line(&status.value.task));
    if let Some(answer) = &status.value.answer {
        outln!("\n{}", answer.trim_end());
    }
    if let Some(diff) = diff_artifact(conn, &follower).await? {
        outln!("\n{}", diffstat::render(&diffstat::of(&diff)));
    }
    Ok(exit)
}

/// On a terminal: asks whether to cancel the task (true) or detach (false). Elsewhere: detach.
fn ask_cancel() -> bool {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() || !std::io::stderr().is_terminal() {
        return false;
    }
    err!("\ncancel the task or detach? [c/D] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if stdin.lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "c" | "C" | "cancel")
}

/// Cancels task `id`; what the server said.
async fn cancel(conn: &Connection, id: &TaskId) -> Result<String, ClientError> {
    let args = SendTaskControlArgs {
        agent_id: None,
        task_id: id.clone(),
        control: ControlAction::Cancel,
        reason: Some("cancelled from `handoff run` (Ctrl-C)".to_owned()),
    };
    Ok(conn.call(&args).await?.value.message)
}

/// The task's diff, when one was kept and is not empty (at most its first 64 KiB).
async fn diff_artifact(
    conn: &Connection,
    follower: &Follower,
) -> Result<Option<ArtifactView>, ClientError> {
    let args = GetTaskHistoryArgs {
        agent_id: None,
        task_id: follower.id().clone(),
        events_offset: Some(follower.offset()),
        events_limit: Some(1),
        include_artifacts: Some(true),
        artifact: None,
        artifact_offset: None,
    };
    let history = conn.call(&args).await?.value;
    Ok(history
        .artifacts
        .unwrap_or_default()
        .into_iter()
        .find(|a| a.kind == ArtifactKind::Diff)
        .filter(|a| !a.content.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_waits_what_was_asked_within_bounds_and_spread() {
        for attempt in 1..20 {
            let wait = retry_wait(Some(102), attempt);
            assert!(
                wait >= Duration::from_millis(102) && wait <= Duration::from_millis(153),
                "{wait:?}"
            );
            let long = retry_wait(Some(600_000), attempt);
            assert!(
                long >= LONGEST_WAIT && long <= LONGEST_WAIT * 3 / 2,
                "{long:?}"
            );
            let tiny = retry_wait(Some(0), attempt);
            assert!(tiny >= Duration::from_millis(50), "{tiny:?}");
        }
        assert!(retry_wait(None, 1) >= Duration::from_secs(1));
    }
}
