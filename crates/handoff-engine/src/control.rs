//! Steering tasks: cancel, pause, resume, and messages into a running executor.

use std::{sync::Arc, time::Duration};

use handoff_runner::{Capabilities, RunControl, RunnerError};
use handoff_task::{AgentId, EventKind, MessageType, NewEvent, Task, TaskId, TaskStatus};
use serde_json::{Value, json};

use crate::{Engine, EngineError, engine::StopReason};

/// How long a message or control waits for a just-claimed run to finish starting.
const START_WAIT: Duration = Duration::from_secs(5);
/// Slack beyond the grace period for a cancelled run to settle.
const SETTLE_SLACK: Duration = Duration::from_secs(10);

/// A control action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Stop for good.
    Cancel,
    /// Freeze.
    Pause,
    /// Unfreeze.
    Resume,
}

impl Control {
    /// The action's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Control::Cancel => "cancel",
            Control::Pause => "pause",
            Control::Resume => "resume",
        }
    }
}

/// What a steering request needs from the executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Steer {
    Pause,
    Resume,
    Message,
}

impl Steer {
    fn name(self) -> &'static str {
        match self {
            Steer::Pause => "pause",
            Steer::Resume => "resume",
            Steer::Message => "messages",
        }
    }

    fn supported_by(self, caps: Capabilities) -> bool {
        match self {
            Steer::Pause | Steer::Resume => caps.pause,
            Steer::Message => caps.messages,
        }
    }
}

/// The result of a control action.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlReceipt {
    /// The task afterwards.
    pub task: Task,
    /// False when the task was already in the asked-for state (controls are idempotent).
    pub changed: bool,
    /// What happened, in words.
    pub message: String,
}

/// The result of sending a message.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageReceipt {
    /// The task.
    pub task: Task,
    /// The message's event number.
    pub seq: i64,
    /// It reached the running executor.
    pub delivered: bool,
    /// What happened, in words.
    pub note: String,
}

impl Engine {
    /// Applies a control action.
    pub async fn control(
        &self,
        agent: &AgentId,
        id: &TaskId,
        control: Control,
        reason: Option<String>,
    ) -> Result<ControlReceipt, EngineError> {
        let task = self.owned(agent, id).await?;
        let reason = reason.unwrap_or_else(|| format!("{} requested by {agent}", control.as_str()));
        if task.status.is_terminal() {
            return Ok(ControlReceipt {
                message: format!("task already finished ({})", task.status),
                task,
                changed: false,
            });
        }
        self.record(
            id,
            NewEvent::new(
                EventKind::Control,
                format!("{}: {reason}", control.as_str()),
            )
            .with_data(json!({ "control": control.as_str(), "reason": reason, "by": agent })),
        )
        .await?;
        match control {
            Control::Cancel => self.cancel(task, reason).await,
            Control::Pause => self.pause(task).await,
            Control::Resume => self.resume(task).await,
        }
    }

    async fn cancel(&self, task: Task, reason: String) -> Result<ControlReceipt, EngineError> {
        let inner = &self.inner;
        if task.status == TaskStatus::Queued {
            let error = format!("cancelled: {reason}");
            if let Some(task) = inner
                .change_status(
                    &task,
                    TaskStatus::Cancelled,
                    error.clone(),
                    None,
                    Some(error),
                )
                .await?
            {
                return Ok(ControlReceipt {
                    task,
                    changed: true,
                    message: "cancelled before it started".to_owned(),
                });
            }
            // Claimed meanwhile: stop the run like any other.
        }
        let known = {
            let mut live = inner.live();
            live.get_mut(&task.id).map(|run| {
                run.stop
                    .get_or_insert(StopReason::Cancelled(reason.clone()));
                run.control.clone()
            })
        };
        let grace = inner.config.tasks.cancel_grace;
        match known {
            Some(Some(control)) => {
                let stopped = control.cancel(grace).await;
                inner
                    .metrics
                    .executor_call(&task.executor, "cancel", stopped.is_ok());
                stopped?;
            }
            // Starting: the run sees the stop flag as soon as the executor is up.
            Some(None) => {}
            // Nothing in this process runs it (its run vanished): settle it directly.
            None => {
                let current = self.owned(&task.agent_id, &task.id).await?;
                if !current.status.is_terminal() {
                    let error = format!("cancelled: {reason}");
                    inner
                        .change_status(
                            &current,
                            TaskStatus::Cancelled,
                            error.clone(),
                            None,
                            Some(error),
                        )
                        .await?;
                }
            }
        }
        let task = inner.wait_settled(&task.id, grace + SETTLE_SLACK).await?;
        Ok(ControlReceipt {
            message: if task.status == TaskStatus::Cancelled {
                "cancelled; the executor's processes are stopped".to_owned()
            } else {
                format!(
                    "the task ended as {} before the cancel took effect",
                    task.status
                )
            },
            changed: task.status == TaskStatus::Cancelled,
            task,
        })
    }

    async fn pause(&self, task: Task) -> Result<ControlReceipt, EngineError> {
        match task.status {
            TaskStatus::Paused => Ok(ControlReceipt {
                message: "already paused".to_owned(),
                task,
                changed: false,
            }),
            TaskStatus::Running => {
                let control = self.steering(&task, Steer::Pause).await?;
                let paused = control.pause().await;
                self.inner
                    .metrics
                    .executor_call(&task.executor, "pause", paused.is_ok());
                paused.map_err(|e| finished_or(e, &task))?;
                let task = self.moved(&task, TaskStatus::Paused, "paused").await?;
                Ok(ControlReceipt {
                    task,
                    changed: true,
                    message: "paused; the executor's processes are frozen".to_owned(),
                })
            }
            other => Err(EngineError::Conflict(format!(
                "a task that is {other} cannot be paused (only running tasks can)"
            ))),
        }
    }

    async fn resume(&self, task: Task) -> Result<ControlReceipt, EngineError> {
        match task.status {
            TaskStatus::Running => Ok(ControlReceipt {
                message: "already running".to_owned(),
                task,
                changed: false,
            }),
            TaskStatus::Paused => {
                let control = self.steering(&task, Steer::Resume).await?;
                let resumed = control.resume().await;
                self.inner
                    .metrics
                    .executor_call(&task.executor, "resume", resumed.is_ok());
                resumed.map_err(|e| finished_or(e, &task))?;
                let task = self.moved(&task, TaskStatus::Running, "resumed").await?;
                Ok(ControlReceipt {
                    task,
                    changed: true,
                    message: "resumed".to_owned(),
                })
            }
            other => Err(EngineError::Conflict(format!(
                "a task that is {other} cannot be resumed (only paused tasks can)"
            ))),
        }
    }

    /// Sends a message into a task: recorded always, delivered when the executor is running and
    /// can take messages, attached to the prompt when the task is still queued.
    pub async fn message(
        &self,
        agent: &AgentId,
        id: &TaskId,
        message_type: MessageType,
        message: String,
        metadata: Option<Value>,
    ) -> Result<MessageReceipt, EngineError> {
        let task = self.owned(agent, id).await?;
        if task.status.is_terminal() {
            return Err(EngineError::Conflict(format!(
                "task {id} has already finished ({}); messages can no longer reach it",
                task.status
            )));
        }
        let waiting = self
            .inner
            .live()
            .get(&task.id)
            .is_some_and(|run| !run.pending.is_empty());
        let (delivered, note) = if message_type == MessageType::Approval && waiting {
            let request = self.approve(&task, agent, &message).await?;
            (
                true,
                format!("answered the executor's request: {}", request.title),
            )
        } else if task.status.is_active() {
            match self.steering(&task, Steer::Message).await {
                Ok(control) => {
                    let sent = control
                        .send_message(&format!("[{message_type}] {message}"))
                        .await;
                    self.inner
                        .metrics
                        .executor_call(&task.executor, "message", sent.is_ok());
                    match sent {
                        Ok(()) => {
                            // A new instruction from the caller: the loop guard starts over.
                            self.inner.policy.reset(&task.id);
                            (true, "delivered to the running executor".to_owned())
                        }
                        Err(e) => (false, format!("recorded, not delivered: {e}")),
                    }
                }
                Err(e) => (false, format!("recorded, not delivered: {e}")),
            }
        } else {
            (
                false,
                "the task is queued; the message will be added to its prompt when it starts"
                    .to_owned(),
            )
        };
        let seq = self
            .record(
                id,
                NewEvent::new(EventKind::Message, message).with_data(json!({
                    "message_type": message_type,
                    "from": agent,
                    "delivered": delivered,
                    "metadata": metadata,
                })),
            )
            .await?;
        Ok(MessageReceipt {
            task,
            seq,
            delivered,
            note,
        })
    }

    /// The running executor's steering handle, once it has started, if it supports `steer`.
    async fn steering(
        &self,
        task: &Task,
        steer: Steer,
    ) -> Result<Arc<dyn RunControl>, EngineError> {
        let deadline = tokio::time::Instant::now() + START_WAIT;
        loop {
            let state = self
                .inner
                .live()
                .get(&task.id)
                .map(|run| (run.control.clone(), run.capabilities));
            match state {
                Some((Some(control), caps)) => {
                    if !steer.supported_by(caps) {
                        return Err(RunnerError::Unsupported {
                            executor: task.executor.clone(),
                            action: steer.name(),
                        }
                        .into());
                    }
                    return Ok(control);
                }
                Some((None, _)) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                _ => {
                    return Err(EngineError::Conflict(format!(
                        "task {} has no run in this server to {}",
                        task.id,
                        steer.name()
                    )));
                }
            }
        }
    }

    async fn moved(&self, task: &Task, to: TaskStatus, reason: &str) -> Result<Task, EngineError> {
        match self
            .inner
            .change_status(task, to, reason, None, None)
            .await?
        {
            Some(task) => Ok(task),
            None => {
                let now = self.owned(&task.agent_id, &task.id).await?;
                Err(EngineError::Conflict(format!(
                    "task changed to {} meanwhile",
                    now.status
                )))
            }
        }
    }

    async fn record(&self, id: &TaskId, event: NewEvent) -> Result<i64, EngineError> {
        self.inner.record(id, event).await
    }
}

/// A run that ended between the status read and the signal is a conflict, not a failure.
fn finished_or(error: RunnerError, task: &Task) -> EngineError {
    match error {
        RunnerError::Finished => {
            EngineError::Conflict(format!("task {} finished meanwhile", task.id))
        }
        other => other.into(),
    }
}
