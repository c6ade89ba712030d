//! What the integration reads about a task, and from whom: the engine implements
//! [`TaskSource`], so the integration sees exactly what `get_task_status` shows and never
//! reaches into the engine's internals.

use async_trait::async_trait;
use handoff_task::{Artifact, NewEvent, Task, TaskEvent, TaskId};
use serde_json::Value;

/// Why the source could not answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("reading the task failed: {0}")]
pub struct SourceError(pub String);

/// A request of the executor waiting for the owner's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingRequest {
    /// The key to answer it with.
    pub key: String,
    /// `permission` or `question`.
    pub kind: String,
    /// What is asked, in one line.
    pub summary: String,
}

/// One consistent look at a task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSnapshot {
    /// The task.
    pub task: Task,
    /// Its latest events, oldest first.
    pub recent_events: Vec<TaskEvent>,
    /// Events recorded in all.
    pub total_events: u64,
    /// Its stored outputs.
    pub artifacts: Vec<Artifact>,
    /// Requests waiting for the owner.
    pub pending_input: Vec<PendingRequest>,
    /// The completion evaluator's conclusion, when it ran.
    pub completion: Option<Value>,
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

/// Where the integration reads tasks and records what it did.
#[async_trait]
pub trait TaskSource: Send + Sync + 'static {
    /// The task with its latest `events` events, or `None` if it no longer exists.
    async fn snapshot(&self, id: &TaskId, events: u32)
    -> Result<Option<TaskSnapshot>, SourceError>;

    /// Adds a note to the task's history (block attached, notification sent, Letta failing).
    async fn note(&self, id: &TaskId, event: NewEvent);

    /// Whether the task's final result reached its caller in the submitting call. A source
    /// without sync calls never delivers one.
    async fn result_delivery(&self, _id: &TaskId) -> Result<ResultDelivery, SourceError> {
        Ok(ResultDelivery::NotDelivered)
    }

    /// Whether this process is the one to write about the task in Letta (several Handoff
    /// instances may share a store; one writes). A source of one process always is.
    async fn writes_here(&self, _id: &TaskId) -> Result<bool, SourceError> {
        Ok(true)
    }
}
