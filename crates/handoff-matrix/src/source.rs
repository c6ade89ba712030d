//! What the integration reads about a task and how it steers one: the composition root
//! implements the integrations' [`TaskSource`] over the engine's public queries and
//! [`Steering`] over the tool pipeline, so the room sees what `get_task_status` shows and a
//! command from the room is an audited tool call.

use async_trait::async_trait;
use handoff_integration::{PendingRequest, SourceError, TaskSource};
use handoff_task::{ArtifactBody, ArtifactKind, MatrixUserId, Task, TaskEvent, TaskId};
use tokio::io::AsyncReadExt;

use crate::Command;

/// The largest diff read for the outcome's diff stat.
const DIFF_READ: u64 = 4 * 1024 * 1024;

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
    let diff = match overview
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::Diff)
    {
        Some(artifact) if finished => read_body(&artifact.body).await,
        _ => None,
    };
    Ok(Some(TaskView {
        task: overview.task,
        recent_events: overview.recent_events,
        pending: overview.pending_input,
        answer,
        diff,
    }))
}

/// An artifact's text (a spilled one read from its file, up to [`DIFF_READ`] bytes).
async fn read_body(body: &ArtifactBody) -> Option<String> {
    match body {
        ArtifactBody::Inline(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        ArtifactBody::File(path) => {
            let file = tokio::fs::File::open(path).await.ok()?;
            let mut bytes = Vec::new();
            file.take(DIFF_READ).read_to_end(&mut bytes).await.ok()?;
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
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
