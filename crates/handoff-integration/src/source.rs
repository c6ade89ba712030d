//! What an integration reads about a task, and from whom: the composition root implements
//! [`TaskSource`] over the engine's public queries, so an integration sees exactly what
//! `get_task_status` shows and never reaches into the engine's internals.

use async_trait::async_trait;
use handoff_task::{Artifact, EventKind, ModelUsage, NewEvent, Task, TaskEvent, TaskId};
use serde_json::{Value, json};

/// Why the source could not answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("reading the task failed: {0}")]
pub struct SourceError(pub String);

/// A request of the executor waiting for an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRequest {
    /// Its id: what answers it (and what Matrix's `!approve` and `!deny` name).
    pub id: String,
    /// `permission` or `question`.
    pub kind: String,
    /// What is asked, in one line.
    pub title: String,
}

/// One consistent look at a task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOverview {
    /// The task.
    pub task: Task,
    /// Its latest events, oldest first.
    pub recent_events: Vec<TaskEvent>,
    /// Events recorded in all.
    pub total_events: u64,
    /// Its stored outputs.
    pub artifacts: Vec<Artifact>,
    /// Requests waiting for an answer.
    pub pending_input: Vec<PendingRequest>,
    /// The completion evaluator's conclusion, when it ran.
    pub completion: Option<Value>,
    /// What its model calls through the gateway took so far (none: it made none).
    pub model_usage: Option<ModelUsage>,
    /// When this look was taken (Unix ms).
    pub at: i64,
}

/// Whether a task's final result reached its caller inside the submitting call
/// (`execute_task {sync: true}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultDelivery {
    /// The call still waits for the task: ask again when it ends.
    Awaited,
    /// The call returned the final result.
    Delivered,
    /// Nobody waits and nobody got it (no sync call, or it ended before the task).
    NotDelivered,
}

/// Where an integration reads tasks and records what it did.
#[async_trait]
pub trait TaskSource: Send + Sync + 'static {
    /// The task with its latest `events` events, or `None` if it no longer exists.
    async fn overview(&self, id: &TaskId, events: u32)
    -> Result<Option<TaskOverview>, SourceError>;

    /// Adds a note to the task's history (block attached, room created, the service failing).
    async fn note(&self, id: &TaskId, event: NewEvent);

    /// The agent's final answer, as `get_task_status` gives it, once it wrote one. A source
    /// that keeps no answers has none.
    async fn final_answer(&self, _id: &TaskId) -> Result<Option<String>, SourceError> {
        Ok(None)
    }

    /// Whether the task's final result reached its caller in the submitting call. A source
    /// without sync calls never delivers one.
    async fn result_delivery(&self, _id: &TaskId) -> Result<ResultDelivery, SourceError> {
        Ok(ResultDelivery::NotDelivered)
    }

    /// Whether this process is the one to write about the task (several Handoff instances may
    /// share a store; one writes). A source of one process always is.
    async fn writes_here(&self, _id: &TaskId) -> Result<bool, SourceError> {
        Ok(true)
    }

    /// Whether this process should take over writing for a task another process wrote about
    /// until now (it took the task over). Only where several instances share the store; a
    /// source of one process never does (it resumes its own work at start).
    async fn adopts(&self, _id: &TaskId) -> Result<bool, SourceError> {
        Ok(false)
    }
}

/// A log note for a task's history about `integration`: `message`, with `step` naming what
/// happened under the integration's key in the event's data (`{"letta": "block_attached"}`).
pub fn step_note(integration: &str, step: &str, message: String) -> NewEvent {
    NewEvent::new(EventKind::Log, message).with_data(json!({ integration: step }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_step_note_is_a_log_keyed_by_its_integration() {
        let note = step_note("matrix", "room_created", "room made".to_owned());
        assert_eq!(note.kind, EventKind::Log);
        assert_eq!(note.message, "room made");
        assert_eq!(note.data, json!({"matrix": "room_created"}));
    }
}
