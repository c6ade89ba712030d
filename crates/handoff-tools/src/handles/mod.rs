//! Protocol-level task handles: a Handoff task as an MCP Tasks client (`io.modelcontextprotocol/
//! tasks`) sees it — polled, answered and cancelled by id. Everything is read from the engine
//! and its store, never from per-connection memory, so a handle outlives the request, the
//! connection and the process that created it. The transport turns these views into wire types.

mod state;

use std::time::Duration;

use handoff_engine::{Engine, EngineError};
use handoff_protocol::{
    TaskNotice,
    tasks::{ApprovalAnswer, ControlAction},
};
use handoff_runner::InputRequest;
use handoff_task::{Principal, TaskId, TaskStatus, unix_millis_now};

pub use state::HandleState;

use crate::tasks::finished_output;

/// Why a handle operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    /// No such task for this caller: unknown, malformed, purged or someone else's (the three
    /// look alike so ids cannot be probed).
    #[error("unknown task: {0}")]
    Unknown(String),
    /// The request cannot apply (e.g. an answer to a request that is no longer pending).
    #[error("{0}")]
    Conflict(String),
    /// A part Handoff needs is unreachable right now (the task store, the instance holding the
    /// run); nothing was changed and the same request may succeed after `retry_after_ms`.
    #[error("{message}")]
    Unavailable {
        /// What is unreachable.
        message: String,
        /// When a retry may succeed.
        retry_after_ms: u64,
    },
    /// Handoff itself failed (store, executor).
    #[error("{0}")]
    Internal(String),
}

impl HandleError {
    /// An unknown task, naming at most the first 80 characters of what the caller sent.
    pub fn unknown(id: &str) -> Self {
        Self::Unknown(id.chars().take(80).collect())
    }
}

impl From<EngineError> for HandleError {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::NotFound(id) => Self::Unknown(id),
            EngineError::Conflict(message) => Self::Conflict(message),
            EngineError::Invalid { message, .. } => Self::Conflict(message),
            EngineError::Unreachable {
                message,
                retry_after,
            } => Self::Unavailable {
                message,
                retry_after_ms: u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX),
            },
            other => Self::Internal(other.to_string()),
        }
    }
}

/// A task as a handle: identity, times, polling hints and its state.
#[derive(Debug, Clone, PartialEq)]
pub struct Handle {
    /// Handoff's task id (the handle's `taskId`).
    pub task_id: TaskId,
    /// Submission time (Unix ms).
    pub created_at_ms: i64,
    /// Time of the latest change seen (Unix ms).
    pub updated_at_ms: i64,
    /// How long after creation the task may be discarded; grows while it runs.
    pub ttl_ms: u64,
    /// How often the client should poll.
    pub poll_interval_ms: u64,
    /// Where it stands, with the payload of that state.
    pub state: HandleState,
}

/// Task handles over the engine, for one instance.
#[derive(Clone)]
pub struct TaskHandles {
    engine: Engine,
    poll_interval: Duration,
    retention: Duration,
}

impl TaskHandles {
    /// Handles over `engine`; `retention` is how long finished tasks are kept.
    pub fn new(engine: Engine, poll_interval: Duration, retention: Duration) -> Self {
        Self {
            engine,
            poll_interval,
            retention,
        }
    }

    /// The handle of `id` as `agent` may see it (owner only).
    pub async fn get(&self, agent: &Principal, id: &str) -> Result<Handle, HandleError> {
        let id = parse(id)?;
        let view = self.engine.status(agent, &id).await?;
        let task = &view.task;
        let last_event = view.recent_events.last().map_or(0, |e| e.at);
        let updated_at_ms = [Some(task.created_at), task.started_at, task.completed_at]
            .into_iter()
            .flatten()
            .chain([last_event])
            .max()
            .unwrap_or(task.created_at);
        let lived = task.completed_at.unwrap_or_else(unix_millis_now) - task.created_at;
        let ttl_ms = u64::try_from(lived.max(0))
            .unwrap_or(0)
            .saturating_add(u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX));
        let state = match task.status {
            s if s.is_terminal() => {
                let output = finished_output(&self.engine, task).await?;
                HandleState::finished(task, output)
            }
            TaskStatus::InputRequired if !view.pending_input.is_empty() => {
                HandleState::InputRequired {
                    requests: view.pending_input.clone(),
                }
            }
            _ => HandleState::working(&view),
        };
        Ok(Handle {
            task_id: id,
            created_at_ms: task.created_at,
            updated_at_ms,
            ttl_ms,
            poll_interval_ms: u64::try_from(self.poll_interval.as_millis()).unwrap_or(1_000),
            state,
        })
    }

    /// Answers the pending request `key` of `id`; `Ok(None)` when no such request is pending
    /// (answers to unknown keys are ignored, as the Tasks extension says).
    pub async fn answer(
        &self,
        agent: &Principal,
        id: &str,
        key: &str,
        mut answer: ApprovalAnswer,
    ) -> Result<Option<InputRequest>, HandleError> {
        let id = parse(id)?;
        answer.request_id = Some(key.to_owned());
        match self.engine.answer_input(agent, &id, answer).await {
            Ok(request) => Ok(Some(request)),
            Err(EngineError::Conflict(_)) => Ok(None),
            Err(other) => Err(other.into()),
        }
    }

    /// Every task event and state change from now on, for followers.
    pub fn follow(&self) -> tokio::sync::broadcast::Receiver<TaskNotice> {
        self.engine.subscribe()
    }

    /// Asks the task to stop; cooperative, so the handle may show `working` for a moment.
    pub async fn cancel(&self, agent: &Principal, id: &str) -> Result<(), HandleError> {
        let id = parse(id)?;
        self.engine
            .control(
                agent,
                &id,
                ControlAction::Cancel,
                Some("cancelled by the client (tasks/cancel)".to_owned()),
            )
            .await?;
        Ok(())
    }
}

fn parse(id: &str) -> Result<TaskId, HandleError> {
    TaskId::parse(id).map_err(|_| HandleError::unknown(id))
}
