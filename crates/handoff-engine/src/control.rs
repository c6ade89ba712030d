//! Steering tasks from outside: cancel, pause, resume, messages and answers. Each checks the
//! caller owns the task, records what was asked, and hands the rest to the task's supervisor
//! through the command seam; a task with no supervisor (queued, or its run vanished) is
//! settled here from the store.
//!
//! A control arrives as the protocol's [`ControlAction`], the tool's own argument, and leaves
//! as the protocol's [`TaskCommand`]. They stay two types because they say different things:
//! the action names what was asked (its reason optional, defaulted here), the command is what
//! the supervisor must do (a cancel with its decided reason) — and only a running task gets a
//! command (a queued cancel, or a control of a finished task, is settled here).

use std::time::Duration;

use handoff_protocol::{
    TaskCommand,
    tasks::{ApprovalAnswer, ControlAction},
};
use handoff_runner::InputRequest;
use handoff_task::{
    AgentId, EventKind, MessageType, NewEvent, Principal, Task, TaskId, TaskStatus,
};
use serde_json::{Value, json};

use crate::{
    Engine, EngineError,
    supervisor::{CommandReply, TaskCommands, parse_approval},
};

/// Slack beyond the grace period for a cancelled run to settle.
const SETTLE_SLACK: Duration = Duration::from_secs(10);

/// What a cancel answers once the wait for the task to settle is over.
fn cancel_message(status: TaskStatus) -> String {
    if status == TaskStatus::Cancelled {
        "cancelled; the executor's processes are stopped".to_owned()
    } else if status.is_terminal() {
        format!("the task ended as {status} before the cancel took effect")
    } else {
        // Still wrapping up (its diff, its last events): the stop is decided, not yet written.
        format!(
            "cancel accepted; the task is still {status} while its run stops \
             (get_task_status shows its final state)"
        )
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
    /// The seam commands travel through to a task's supervisor, in this process or in the
    /// instance holding the task.
    pub(crate) fn commands(&self) -> &dyn TaskCommands {
        &*self.inner
    }

    /// Applies a control action.
    pub async fn control(
        &self,
        caller: &Principal,
        id: &TaskId,
        control: ControlAction,
        reason: Option<String>,
    ) -> Result<ControlReceipt, EngineError> {
        let task = self.steerable(caller, id).await?;
        let agent = caller.name();
        let reason = reason.unwrap_or_else(|| format!("{} requested by {agent}", control.as_str()));
        if task.status.is_terminal() {
            return Ok(ControlReceipt {
                message: format!("task already finished ({})", task.status),
                task,
                changed: false,
            });
        }
        self.inner
            .record(
                id,
                NewEvent::new(
                    EventKind::Control,
                    format!("{}: {reason}", control.as_str()),
                )
                .with_data(json!({ "control": control.as_str(), "reason": reason, "by": agent })),
            )
            .await?;
        let done = match control {
            ControlAction::Cancel => self.cancel(task, reason).await,
            ControlAction::Pause | ControlAction::Resume => self.freeze(task, control).await,
        };
        if let Err(EngineError::Unreachable { message, .. }) = &done {
            // The history says the control was asked; it must also say it was not applied.
            let note = format!("{} not applied: {message}", control.as_str());
            if let Err(e) = self
                .inner
                .record(id, NewEvent::new(EventKind::Log, note))
                .await
            {
                tracing::warn!(task = %id, error = %e, "could not record a withdrawn control");
            }
        }
        done
    }

    async fn cancel(&self, task: Task, reason: String) -> Result<ControlReceipt, EngineError> {
        let inner = &self.inner;
        let error = format!("cancelled: {reason}");
        if task.status == TaskStatus::Queued
            && let Some(task) = inner
                .change_status(
                    &task,
                    TaskStatus::Cancelled,
                    error.clone(),
                    None,
                    Some(error.clone()),
                )
                .await?
        {
            return Ok(ControlReceipt {
                task,
                changed: true,
                message: "cancelled before it started".to_owned(),
            });
        }
        // Claimed meanwhile, or running: its supervisor stops the run.
        let command = TaskCommand::Cancel {
            reason: reason.clone(),
        };
        if self
            .commands()
            .send(&task.id, command.clone())
            .await?
            .is_none()
        {
            // Nothing in this process runs it (its run vanished): settle it directly.
            let current = self
                .steerable(&Principal::Agent(task.agent_id.clone()), &task.id)
                .await?;
            if !current.status.is_terminal() {
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
            // The task may have been between its claim and its supervisor: a supervisor that
            // appeared meanwhile stops the run; one that appears later sees the task ended and
            // never starts it.
            self.commands().send(&task.id, command).await?;
        }
        let grace = inner.config.tasks.cancel_grace;
        let task = inner.wait_settled(&task.id, grace + SETTLE_SLACK).await?;
        Ok(ControlReceipt {
            message: cancel_message(task.status),
            // A task still finishing took the cancel; it was not in a final state already.
            changed: task.status == TaskStatus::Cancelled || !task.status.is_terminal(),
            task,
        })
    }

    async fn freeze(
        &self,
        task: Task,
        control: ControlAction,
    ) -> Result<ControlReceipt, EngineError> {
        let (command, already) = match control {
            ControlAction::Pause => (TaskCommand::Pause, TaskStatus::Paused),
            _ => (TaskCommand::Resume, TaskStatus::Running),
        };
        if task.status == already {
            return Ok(ControlReceipt {
                message: format!("already {}", already.as_str()),
                task,
                changed: false,
            });
        }
        match self.commands().send(&task.id, command).await? {
            Some(CommandReply::Steered {
                task,
                changed,
                message,
            }) => Ok(ControlReceipt {
                task: *task,
                changed,
                message,
            }),
            Some(other) => Err(EngineError::Internal(format!(
                "unexpected reply to {}: {other:?}",
                control.as_str()
            ))),
            None if task.status == TaskStatus::Queued => {
                let (verb, only) = match control {
                    ControlAction::Pause => ("paused", "running"),
                    _ => ("resumed", "paused"),
                };
                Err(EngineError::Conflict(format!(
                    "a task that is queued cannot be {verb} (only {only} tasks can)"
                )))
            }
            None => Err(EngineError::Conflict(format!(
                "task {} has no run in this server to {}",
                task.id,
                control.as_str()
            ))),
        }
    }

    /// Sends a message into a task: recorded always, delivered when the executor is running and
    /// can take messages, attached to the prompt when the task is still queued, and the start
    /// of a follow-up round (see [`crate::follow_up`]) when the task has ended. An approval
    /// message answers the oldest pending request when the task waits for one; a structured
    /// answer with nothing pending is refused.
    pub async fn message(
        &self,
        caller: &Principal,
        id: &TaskId,
        message_type: MessageType,
        message: String,
        metadata: Option<Value>,
    ) -> Result<MessageReceipt, EngineError> {
        // The same cap as a task's metadata: it is stored with the message event.
        if let Some(metadata) = &metadata {
            crate::submit::check_metadata(metadata)?;
        }
        let task = self.steerable(caller, id).await?;
        let agent = caller.name();
        if task.status.is_terminal() {
            return self
                .follow_up(caller, task, message_type, message, metadata)
                .await;
        }
        let waiting = !self.inner.store.input_requests(id).await?.is_empty();
        // A structured answer with no request to answer would reach the agent as chat.
        if message_type == MessageType::Approval
            && !waiting
            && ApprovalAnswer::from_message(&message).is_ok()
        {
            return Err(EngineError::Conflict(format!(
                "nothing to approve: task {id} has no pending request (send a message of \
                 another type to tell the agent something)"
            )));
        }
        let (delivered, note) = if message_type == MessageType::Approval && waiting {
            let answer = parse_approval(&message)?;
            let request = self.answer(agent, &task, answer).await?;
            (
                true,
                format!("answered the executor's request: {}", request.title),
            )
        } else if task.status.is_active() {
            let text = format!("[{message_type}] {message}");
            match self
                .commands()
                .send(id, TaskCommand::Message { text })
                .await
            {
                Ok(Some(CommandReply::Message { delivered, note })) => (delivered, note),
                Ok(_) => (
                    false,
                    format!("recorded, not delivered: task {id} has no run in this server"),
                ),
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
            .inner
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

    /// Answers one of the task's pending requests (the oldest when the answer names none) —
    /// for callers that already hold a typed answer, such as an MCP Tasks `tasks/update`.
    pub async fn answer_input(
        &self,
        caller: &Principal,
        id: &TaskId,
        answer: ApprovalAnswer,
    ) -> Result<InputRequest, EngineError> {
        let task = self.steerable(caller, id).await?;
        self.answer(caller.name(), &task, answer).await
    }

    async fn answer(
        &self,
        agent: &AgentId,
        task: &Task,
        answer: ApprovalAnswer,
    ) -> Result<InputRequest, EngineError> {
        let command = TaskCommand::Answer {
            answer,
            by: agent.clone(),
        };
        match self.commands().send(&task.id, command).await? {
            Some(CommandReply::Answered(request)) => Ok(request),
            Some(other) => Err(EngineError::Internal(format!(
                "unexpected reply to an answer: {other:?}"
            ))),
            None => Err(EngineError::Conflict(
                "the task has no running executor to answer".to_owned(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A task still wrapping up when the wait ended was answered "the task ended as running
    // before the cancel took effect": it had not ended, and the cancel had taken effect.
    #[test]
    fn a_cancel_answer_never_says_an_active_task_ended() {
        assert!(cancel_message(TaskStatus::Cancelled).starts_with("cancelled"));
        assert_eq!(
            cancel_message(TaskStatus::Completed),
            "the task ended as completed before the cancel took effect"
        );
        let still = cancel_message(TaskStatus::Running);
        assert!(still.starts_with("cancel accepted"), "{still}");
        assert!(!still.contains("ended"), "{still}");
    }
}
