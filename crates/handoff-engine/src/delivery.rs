//! Delivery of a completed round's branch (`tasks.delivery` or the task's own `delivery`):
//! `branch` leaves the commits where [`crate::branch`] made them; `push` pushes the branch to
//! `tasks.push_remote` from the repository itself — with the operator's git configuration and
//! credentials, outside every sandbox, with the repository's hooks off — and then runs the
//! operator's `tasks.after_push` command (a forge CLI: `gh pr create …`). Each step is said on
//! the task as an event whose `data.delivery` holds its outcome; a failure is an error event,
//! never silent, and never changes how the round ended.
//!
//! Durable: the events. Nothing lives in memory.

use std::{path::Path, process::Stdio, time::Duration};

use handoff_task::{Delivery, EventKind, NewEvent, Task, closing_answer};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::{CLOSING_EVENTS, git_process, state::EngineState, worktree};

/// Lines of the `after_push` command's output kept on the task.
const HOOK_LINES: usize = 20;
/// Characters of each of those lines.
const HOOK_LINE_CHARS: usize = 300;

/// Delivers `task`'s branch after a round that ended completed, as its delivery says.
pub(crate) async fn deliver(inner: &EngineState, task: &Task) {
    let tasks = &inner.config.tasks;
    if task.options.delivery.unwrap_or(tasks.delivery) != Delivery::Push {
        return;
    }
    let Some(repo) = inner.workdirs.repository_for(&task.options) else {
        return;
    };
    let branch = worktree::branch_for(task);
    let remote = tasks.push_remote.as_str();
    let pushed = tokio::time::timeout(tasks.delivery_timeout, push(&repo, remote, &branch))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "it took over {} s",
                tasks.delivery_timeout.as_secs()
            ))
        });
    let event = match &pushed {
        Ok(()) => NewEvent::new(EventKind::Log, format!("pushed {branch} to {remote}"))
            .with_data(outcome("pushed", &branch, remote, None)),
        Err(e) => NewEvent::new(
            EventKind::Error,
            format!("could not push {branch} to {remote}: {e}"),
        )
        .with_data(outcome("push_failed", &branch, remote, Some(e))),
    };
    record(inner, task, event).await;
    if pushed.is_err() {
        return;
    }
    if let Some(command) = &tasks.after_push {
        let event = after_push(inner, task, &repo, &branch, command).await;
        record(inner, task, event).await;
    }
}

/// What one delivery step did, as the event's `data`.
fn outcome(state: &str, branch: &str, remote: &str, error: Option<&String>) -> Value {
    let mut delivery = json!({ "state": state, "branch": branch, "remote": remote });
    if let Some(error) = error {
        delivery["error"] = json!(error);
    }
    json!({ "delivery": delivery })
}

/// `git push REMOTE refs/heads/BRANCH` in `repo`, never asking for a password.
async fn push(repo: &Path, remote: &str, branch: &str) -> Result<(), String> {
    let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
    let args: [&std::ffi::OsStr; 6] = [
        "-c".as_ref(),
        "core.hooksPath=/dev/null".as_ref(),
        "push".as_ref(),
        "--porcelain".as_ref(),
        remote.as_ref(),
        refspec.as_ref(),
    ];
    let env = [("GIT_TERMINAL_PROMPT", "0")];
    git_process::run(Some(repo), &args, &env, None, "push")
        .await
        .map(drop)
}

/// Runs the `after_push` command in `repo` with the delivery's environment; the event that
/// says how it went.
async fn after_push(
    inner: &EngineState,
    task: &Task,
    repo: &Path,
    branch: &str,
    command: &str,
) -> NewEvent {
    let remote = inner.config.tasks.push_remote.as_str();
    let answer_file = match answer_file(inner, task).await {
        Ok(path) => path,
        Err(e) => {
            let error = format!("after_push not run: could not write the answer file: {e}");
            return NewEvent::new(EventKind::Error, error.clone()).with_data(outcome(
                "hook_failed",
                branch,
                remote,
                Some(&error),
            ));
        }
    };
    let mut child = Command::new("sh");
    child
        .arg("-c")
        .arg(command)
        .current_dir(repo)
        .env("HANDOFF_BRANCH", branch)
        .env("HANDOFF_REMOTE", remote)
        .env("HANDOFF_TASK_ID", task.id.as_str())
        .env("HANDOFF_TASK_TITLE", title(&task.description))
        .env("HANDOFF_ROUND", task.options.round.to_string())
        .env("HANDOFF_REPOSITORY", repo)
        .env("HANDOFF_ANSWER_FILE", &answer_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let limit = inner.config.tasks.delivery_timeout;
    let ran = match child.spawn() {
        Ok(child) => tokio::time::timeout(limit, child.wait_with_output())
            .await
            .unwrap_or_else(|_| Err(timed_out(limit))),
        Err(e) => Err(e),
    };
    hook_event(ran, branch, remote)
}

/// The error of a command stopped at its time limit.
fn timed_out(limit: Duration) -> std::io::Error {
    std::io::Error::other(format!("stopped after {} s", limit.as_secs()))
}

/// The event of a finished (or unstartable) `after_push` command.
fn hook_event(ran: std::io::Result<std::process::Output>, branch: &str, remote: &str) -> NewEvent {
    let output = match ran {
        Ok(output) => output,
        Err(e) => {
            let error = format!("after_push could not run: {e}");
            return NewEvent::new(EventKind::Error, error.clone()).with_data(outcome(
                "hook_failed",
                branch,
                remote,
                Some(&error),
            ));
        }
    };
    let mut lines: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&output.stderr).lines())
        .filter(|l| !l.trim().is_empty())
        .map(|l| handoff_runner::clip(l, HOOK_LINE_CHARS))
        .collect();
    lines.drain(..lines.len().saturating_sub(HOOK_LINES));
    let code = output.status.code();
    let (kind, state, said) = if output.status.success() {
        (EventKind::Log, "delivered", "after_push ran".to_owned())
    } else {
        let exit = code.map_or_else(|| "a signal".to_owned(), |c| format!("exit {c}"));
        (
            EventKind::Error,
            "hook_failed",
            format!("after_push failed ({exit})"),
        )
    };
    let mut data = outcome(state, branch, remote, None);
    data["delivery"]["hook_exit"] = json!(code);
    data["delivery"]["hook_output"] = json!(lines);
    let message = match lines.last() {
        Some(last) => format!("{said}: {last}"),
        None => said,
    };
    NewEvent::new(kind, message).with_data(data)
}

/// The task's title: the first line of its description.
fn title(description: &str) -> String {
    let first = description.lines().next().unwrap_or_default().trim();
    handoff_runner::clip(first, 200)
}

/// Writes the round's final answer where the `after_push` command can read it.
async fn answer_file(inner: &EngineState, task: &Task) -> std::io::Result<std::path::PathBuf> {
    let events = inner
        .store
        .recent_events(&task.id, CLOSING_EVENTS)
        .await
        .map_err(std::io::Error::other)?;
    let answer = closing_answer(&events).unwrap_or_default();
    let dir = inner.artifacts_dir.join(task.id.as_str());
    tokio::fs::create_dir_all(&dir).await?;
    let path = dir.join(format!("answer-round-{}.txt", task.options.round));
    tokio::fs::write(&path, answer).await?;
    Ok(path)
}

/// Says a delivery step on the task; a store that fails costs the event, not the round.
async fn record(inner: &EngineState, task: &Task, event: NewEvent) {
    if let Err(e) = inner.record(&task.id, event).await {
        tracing::warn!(task = %task.id, error = %e, "could not record the delivery");
    }
}
