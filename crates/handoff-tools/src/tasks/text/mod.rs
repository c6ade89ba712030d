//! The texts of the task tools, one module per family: a single task (`task`), pages of tasks
//! and events (`pages`), files (`files`), approvals and the audit log (`approvals`). Each
//! renders from the tool's structured output plus the few facts the output does not carry
//! ([`Outlook`]), so the texts are tested without an engine.

mod approvals;
mod files;
mod pages;
mod task;

pub(crate) use approvals::{approvals, audit_log, revoked};
pub(crate) use files::{file_chunk, file_listing};
pub(crate) use pages::{artifact_part, history, task_list};
pub(crate) use task::{control, execute, message, status};

use handoff_protocol::{TaskStatus, TaskView, tasks::ExecuteTaskOutput};
use handoff_task::ExitInfo;
use serde_json::json;

use crate::{
    FollowUp,
    wording::{call, duration, line},
};

/// Characters of an error quoted in a headline.
const ERROR_CHARS: usize = 300;

/// What a task's text says beyond its structured output, gathered by the tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outlook {
    /// What the caller hears about the task without asking (only its owner hears anything).
    pub follow_up: FollowUp,
    /// The executor agent's closing text, once the task has ended.
    pub answer: Option<String>,
}

/// The facts a headline needs, from whichever output carries them.
pub(crate) struct Glance<'a> {
    /// Task id.
    pub id: &'a str,
    /// Current state.
    pub status: TaskStatus,
    /// Executor running it.
    pub executor: &'a str,
    /// Run time so far or in total; none until it started.
    pub duration_ms: Option<i64>,
    /// How its process ended.
    pub exit: Option<ExitInfo>,
    /// Why it failed, timed out or was cancelled.
    pub error: Option<&'a str>,
    /// Position in the queue, while queued.
    pub queue_position: Option<u64>,
}

impl<'a> Glance<'a> {
    /// A task view's facts.
    pub(crate) fn of_view(task: &'a TaskView, queue_position: Option<u64>) -> Self {
        Self {
            id: &task.task_id,
            status: task.status,
            executor: &task.executor,
            duration_ms: task.duration_ms,
            exit: task.exit,
            error: task.error.as_deref(),
            queue_position,
        }
    }

    /// An `execute_task` output's facts.
    pub(crate) fn of_submission(out: &'a ExecuteTaskOutput) -> Self {
        Self {
            id: &out.task_id,
            status: out.status,
            executor: &out.executor,
            duration_ms: out.duration_ms,
            exit: out.exit,
            error: out.error.as_deref(),
            queue_position: out.queue_position,
        }
    }
}

/// The first line of a task's text: where it stands, in words.
/// `Task task_… is running (opencode, 2m 13s so far).`
pub(crate) fn headline(task: &Glance<'_>) -> String {
    let (id, executor) = (task.id, task.executor);
    let so_far = task
        .duration_ms
        .map_or_else(String::new, |ms| format!(", {} so far", duration(ms)));
    match task.status {
        TaskStatus::Queued => match task.queue_position {
            Some(p) => format!("Task {id} is queued ({executor}, position {p} in the queue)."),
            None => format!("Task {id} is queued ({executor})."),
        },
        TaskStatus::Running => format!("Task {id} is running ({executor}{so_far})."),
        TaskStatus::Paused => format!("Task {id} is paused ({executor}{so_far})."),
        TaskStatus::InputRequired => {
            format!("Task {id} is waiting for an answer ({executor}{so_far}).")
        }
        ended => ended_headline(task, ended),
    }
}

/// `Task … failed after 12s (opencode, exit code 1): why.`
fn ended_headline(task: &Glance<'_>, status: TaskStatus) -> String {
    let verb = match status {
        TaskStatus::Completed => "completed",
        TaskStatus::Timeout => "timed out",
        TaskStatus::Cancelled => "was cancelled",
        _ => "failed",
    };
    let when = match task.duration_ms {
        Some(ms) => format!(" after {}", duration(ms)),
        None => " before it started".to_owned(),
    };
    let exit = match task.exit {
        Some(ExitInfo {
            code: Some(code), ..
        }) => format!(", exit code {code}"),
        Some(ExitInfo {
            signal: Some(signal),
            ..
        }) => format!(", signal {signal}"),
        _ => String::new(),
    };
    let why = match task.error {
        Some(error) if status != TaskStatus::Completed => {
            format!(": {}", line(error, ERROR_CHARS))
        }
        _ => String::new(),
    };
    let id = task.id;
    format!("Task {id} {verb}{when} ({}{exit}){why}.", task.executor)
}

/// What to do next about a task, given what its caller hears without asking.
pub(crate) fn next_step(id: &str, status: TaskStatus, follow_up: &FollowUp) -> String {
    let status_call = call("get_task_status", json!({ "task_id": id }));
    if status.is_terminal() {
        return format!(
            "Next: {} has every event and the full output; {} lists the files it worked on.",
            call("get_task_history", json!({ "task_id": id })),
            call("get_task_files", json!({ "task_id": id })),
        );
    }
    if status == TaskStatus::InputRequired {
        return format!("It waits for an answer: {status_call} shows the request.");
    }
    let resume = if status == TaskStatus::Paused {
        let resume = call(
            "send_task_control",
            json!({ "task_id": id, "control": "resume" }),
        );
        format!("Resume it with {resume}. ")
    } else {
        String::new()
    };
    let block = follow_up.memory_block.as_deref().map(|label| {
        if status == TaskStatus::Queued {
            format!("Progress will be in your memory block {label} once it starts.")
        } else {
            format!("Progress is in your memory block {label}.")
        }
    });
    let rest = match (follow_up.message_at_end, block) {
        (true, Some(block)) => {
            format!("You will get a message when it ends; no need to poll. {block}")
        }
        (true, None) => "You will get a message when it ends; no need to poll.".to_owned(),
        (false, Some(block)) => {
            format!("{block} No message comes when it ends: call {status_call} for the outcome.")
        }
        (false, None) => format!("Call {status_call} for progress."),
    };
    format!("{resume}{rest}")
}

/// A task's title: its description on one line, short.
pub(crate) fn title(description: &str) -> String {
    line(description, 120)
}

#[cfg(test)]
mod tests;
