//! What the integration reads about a task and how it steers one: the composition root
//! implements the integrations' [`TaskSource`] over the engine's public queries and
//! [`Steering`] over the tool pipeline, so the room sees what `get_task_status` shows and a
//! command from the room is an audited tool call.

use async_trait::async_trait;
use handoff_integration::{PendingRequest, SourceError, TaskSource};
use handoff_task::{ArtifactBody, ArtifactKind, FileStat, MatrixUserId, Task, TaskEvent, TaskId};

use crate::Command;

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
    /// What the task's stored diff changes, per file (counted over the whole diff).
    pub diff_stat: Option<Vec<FileStat>>,
}

/// The task with its latest `events` events, or `None` if it no longer exists; a finished
/// task's answer and diff with it.
pub(crate) async fn view(
    source: &dyn TaskSource,
    id: &TaskId,
    events: u32,
) -> Result<Option<TaskView>, SourceError> {
    let Some(overview) = source.overview(id, events).await? else {
        return Ok(None);
    };
    let finished = overview.task.status.is_terminal();
    let answer = if finished {
        source.final_answer(id).await?
    } else {
        None
    };
    let diff_stat = match overview
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::Diff)
    {
        Some(artifact) if finished => whole_diff_stat(&artifact.body).await,
        _ => None,
    };
    Ok(Some(TaskView {
        task: overview.task,
        recent_events: overview.recent_events,
        pending: overview.pending_input,
        answer,
        diff_stat,
    }))
}

/// What a stored diff changes, read whole off the async threads; `None` if it cannot be read.
async fn whole_diff_stat(body: &ArtifactBody) -> Option<Vec<FileStat>> {
    let body = body.clone();
    tokio::task::spawn_blocking(move || handoff_task::diff_stat_of_body(&body).ok())
        .await
        .ok()
        .flatten()
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
