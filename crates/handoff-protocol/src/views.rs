//! Tasks and events as the tools show them: the store's records, with long text clipped.

use handoff_task::{EventKind, ExitInfo, Task, TaskEvent, TaskStatus, unix_millis_now};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Characters of an event message shown in views (the full text stays in the store).
pub const EVENT_MESSAGE_CHARS: usize = 2000;
/// Characters of the task description shown in views.
pub const DESCRIPTION_CHARS: usize = 500;

/// A task as tools show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskView {
    /// Task id.
    pub task_id: String,
    /// Current state.
    pub status: TaskStatus,
    /// Executor running it.
    pub executor: String,
    /// The description (first 500 characters).
    pub description: String,
    /// Scheduling priority.
    pub priority: i32,
    /// Working directory.
    pub workdir: String,
    /// Submitted (Unix ms).
    pub created_at_ms: i64,
    /// Started (Unix ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<i64>,
    /// Finished (Unix ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<i64>,
    /// Run time so far, or in total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    /// How the executor's process ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<ExitInfo>,
    /// Why it failed, timed out or was cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The submission's idempotency key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Caller metadata.
    pub metadata: Value,
    /// The git branch the task works and is committed on, when the server keeps a repository
    /// for tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Which round of work the task is in, once a follow-up continued it (absent: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
}

impl From<&Task> for TaskView {
    fn from(task: &Task) -> Self {
        Self {
            task_id: task.id.to_string(),
            status: task.status,
            executor: task.executor.clone(),
            description: clip(&task.description, DESCRIPTION_CHARS),
            priority: task.priority,
            workdir: task.workdir.clone(),
            created_at_ms: task.created_at,
            started_at_ms: task.started_at,
            completed_at_ms: task.completed_at,
            duration_ms: task.duration_ms(unix_millis_now()),
            exit: task.exit,
            error: task.error.clone(),
            idempotency_key: task.idempotency_key.clone(),
            metadata: task.metadata.clone(),
            branch: task.options.branch.clone(),
            round: (task.options.round > 1).then_some(task.options.round),
        }
    }
}

/// An event as tools show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventView {
    /// Position in the task's log, from 1.
    pub seq: i64,
    /// When (Unix ms).
    pub at_ms: i64,
    /// What it records.
    pub kind: EventKind,
    /// One line (clipped to 2000 characters; the store keeps it whole).
    pub message: String,
    /// Structured details.
    pub data: Value,
}

impl From<&TaskEvent> for EventView {
    fn from(event: &TaskEvent) -> Self {
        Self {
            seq: event.seq,
            at_ms: event.at,
            kind: event.kind,
            message: clip(&event.message, EVENT_MESSAGE_CHARS),
            data: event.data.clone(),
        }
    }
}

impl From<TaskEvent> for EventView {
    /// The event's text and data move into the view; only a long message is copied (clipped).
    fn from(event: TaskEvent) -> Self {
        let message = match event.message.char_indices().nth(EVENT_MESSAGE_CHARS) {
            None => event.message,
            Some(_) => clip(&event.message, EVENT_MESSAGE_CHARS),
        };
        Self {
            seq: event.seq,
            at_ms: event.at,
            kind: event.kind,
            message,
            data: event.data,
        }
    }
}

/// Cuts `text` to `max` characters, saying how much was left out.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}… [{} more bytes]", &text[..cut], text.len() - cut),
    }
}

#[cfg(test)]
mod tests {
    use handoff_task::{EventKind, TaskEvent, TaskId};
    use serde_json::json;

    use super::{EVENT_MESSAGE_CHARS, EventView, clip};

    #[test]
    fn an_event_moved_into_its_view_reads_as_one_borrowed() {
        for message in ["short".to_owned(), "é".repeat(EVENT_MESSAGE_CHARS + 3)] {
            let event = TaskEvent {
                task_id: TaskId::generate().unwrap(),
                seq: 3,
                at: 42,
                kind: EventKind::Text,
                message,
                data: json!({"a": [1, 2]}),
            };
            assert_eq!(EventView::from(event.clone()), EventView::from(&event));
        }
    }

    #[test]
    fn clipping_says_what_was_cut() {
        assert_eq!(clip("abc", 5), "abc");
        assert_eq!(clip("abcdef", 3), "abc… [3 more bytes]");
        assert_eq!(clip("ééé", 1), "é… [4 more bytes]");
    }
}
