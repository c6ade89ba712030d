//! What the integration reads about a task and how it steers one: the composition root
//! implements both over the engine's public queries and the tool pipeline, so the room sees
//! what `get_task_status` shows and a command from the room is an audited tool call.

use async_trait::async_trait;
use handoff_task::{MatrixUserId, NewEvent, Task, TaskEvent, TaskId};

use crate::Command;

/// Why the source could not answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("reading the task failed: {0}")]
pub struct SourceError(pub String);

/// A request of the executor waiting for an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRequest {
    /// Its id (what `!approve` and `!deny` name).
    pub id: String,
    /// `permission` or `question`.
    pub kind: String,
    /// What is asked, in one line.
    pub title: String,
}

/// One look at a task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    /// The task.
    pub task: Task,
    /// Its latest events, oldest first.
    pub recent_events: Vec<TaskEvent>,
    /// Requests waiting for an answer.
    pub pending: Vec<PendingRequest>,
    /// The agent's final answer (as `get_task_status` gives it), once it wrote one.
    pub answer: Option<String>,
    /// The task's diff, when it stored one.
    pub diff: Option<String>,
}

/// Where the integration reads tasks and records what it did.
#[async_trait]
pub trait TaskSource: Send + Sync + 'static {
    /// The task with its latest `events` events, or `None` if it no longer exists.
    async fn view(&self, id: &TaskId, events: u32) -> Result<Option<TaskView>, SourceError>;

    /// Adds a note to the task's history (room created, Matrix failing).
    async fn note(&self, id: &TaskId, event: NewEvent);

    /// Whether this process is the one to post about the task (several Handoff instances may
    /// share a store; one posts). A source of one process always is.
    async fn writes_here(&self, _id: &TaskId) -> Result<bool, SourceError> {
        Ok(true)
    }

    /// Whether this process should take over posting for a task whose room another process
    /// posted to until now (it took the task over). Only where several instances share the
    /// store; a source of one process never does (its own rooms are resumed at start).
    async fn adopts(&self, _id: &TaskId) -> Result<bool, SourceError> {
        Ok(false)
    }
}

/// Applies a command from a room, as `sender`, through the same pipeline and audit as the
/// MCP tools. `Ok` is what to tell the room; `Err` is the refusal or failure to tell it.
#[async_trait]
pub trait Steering: Send + Sync + 'static {
    /// Applies `command` (never [`Command::Help`]) to `task`.
    async fn steer(
        &self,
        sender: &MatrixUserId,
        task: &TaskId,
        command: &Command,
    ) -> Result<String, String>;
}
