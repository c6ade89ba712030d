//! The Tasks extension's five states, mapped from Handoff's eight.

use handoff_engine::StatusView;
use handoff_protocol::{clip, tasks::ExecuteTaskOutput};
use handoff_runner::InputRequest;
use handoff_task::{EventKind, Task, TaskStatus};

use crate::Reply;

/// Where a handle stands, with what that state carries.
#[derive(Debug, Clone, PartialEq)]
pub enum HandleState {
    /// Queued, running or paused (or between two answers); the message says which.
    Working {
        /// One line for people: "queued (position 3)", "running: …", "paused".
        message: String,
    },
    /// The executor waits for the owner's answers.
    InputRequired {
        /// The pending requests, oldest first.
        requests: Vec<InputRequest>,
    },
    /// The task ended with a result (done, failed at its work, or timed out): the same
    /// output a `sync` `execute_task` returns.
    Completed {
        /// The `execute_task` output (boxed: the other states are a line of text).
        output: Box<ExecuteTaskOutput>,
        /// Its text, as a `sync` call's.
        text: String,
    },
    /// Handoff could not run the task at all (it never started): the request failed.
    Failed {
        /// Why.
        message: String,
    },
    /// Stopped on request.
    Cancelled {
        /// Who stopped it and why.
        message: String,
    },
}

impl HandleState {
    /// The state of a task that reached a terminal status.
    pub(super) fn finished(task: &Task, reply: Reply<ExecuteTaskOutput>) -> Self {
        let why = || {
            task.error
                .clone()
                .unwrap_or_else(|| task.status.to_string())
        };
        match task.status {
            TaskStatus::Cancelled => Self::Cancelled { message: why() },
            // A run that never started is a failure of the request, not a result of the work.
            TaskStatus::Failed if task.started_at.is_none() => Self::Failed { message: why() },
            _ => Self::Completed {
                output: Box::new(reply.output),
                text: reply.text,
            },
        }
    }

    /// The state of a task still under way.
    pub(super) fn working(view: &StatusView) -> Self {
        let message = match view.task.status {
            TaskStatus::Queued => match view.queue_position {
                Some(position) => format!("queued (position {position})"),
                None => "queued".to_owned(),
            },
            TaskStatus::Paused => "paused".to_owned(),
            TaskStatus::InputRequired => {
                "waiting for an answer (see get_task_status; answer with send_task_message)"
                    .to_owned()
            }
            // What the agent is doing: its latest tool call, else its latest event.
            status => match view
                .recent_events
                .iter()
                .rev()
                .find(|e| e.kind == EventKind::Tool)
                .or(view.recent_events.last())
            {
                Some(event) => format!("{status}: {}", clip(&event.message, STATUS_MESSAGE_CHARS)),
                None => status.to_string(),
            },
        };
        Self::Working { message }
    }
}

/// Longest status message (a poll answer stays small).
const STATUS_MESSAGE_CHARS: usize = 200;
