//! The command seam: how anything outside a run (tools, CLI, dashboard, another instance)
//! steers it. Commands are plain data so that a store-backed delivery to another instance can
//! carry them later; today they travel in process, to the run's supervisor mailbox.

use async_trait::async_trait;
use handoff_runner::{InputAnswer, InputRequest};
use handoff_task::{AgentId, Task, TaskId};

use crate::EngineError;

/// What a task's owner (or an operator) asks of its running supervisor.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCommand {
    /// Stop for good.
    Cancel {
        /// Why, in words.
        reason: String,
    },
    /// Freeze the executor's processes.
    Pause,
    /// Unfreeze them.
    Resume,
    /// Deliver a message into the running executor.
    Message {
        /// The text as the executor should read it.
        text: String,
    },
    /// Answer one of the executor's pending requests.
    Answer {
        /// The answer (naming the request, or the oldest).
        answer: InputAnswer,
        /// Who answers.
        by: AgentId,
    },
}

/// What the supervisor did with a command.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandReply {
    /// The run is being stopped; its final state follows.
    Stopping,
    /// A pause or resume was applied (or already in place).
    Steered {
        /// The task afterwards (boxed: replies travel by value through the mailbox).
        task: Box<Task>,
        /// False when it already was in the asked-for state.
        changed: bool,
        /// What happened, in words.
        message: String,
    },
    /// A message went to the executor, or could not.
    Message {
        /// It reached the executor.
        delivered: bool,
        /// What happened, in words.
        note: String,
    },
    /// A pending request was answered.
    Answered(InputRequest),
}

/// Delivers commands to whichever supervisor owns a task's run.
#[async_trait]
pub trait TaskCommands: Send + Sync {
    /// Sends `command` to the supervisor of task `id` and waits for its reply; `Ok(None)` when
    /// no supervisor owns a run of that task.
    async fn send(
        &self,
        id: &TaskId,
        command: TaskCommand,
    ) -> Result<Option<CommandReply>, EngineError>;
}
