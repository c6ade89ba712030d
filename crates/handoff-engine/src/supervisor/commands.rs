//! The command seam: how anything outside a run (tools, CLI, dashboard, another instance)
//! steers it. The command is the protocol's [`TaskCommand`], the same value in this process
//! and posted through the store to the instance holding the run (`peers`).
//!
//! The reply stays the engine's own: in process it hands back live values (the task as the
//! supervisor left it, the runner's request it answered); between instances `peers` sends
//! only what the caller cannot re-read from the store, plus the kind of a refusal.

use async_trait::async_trait;
use handoff_protocol::TaskCommand;
use handoff_runner::InputRequest;
use handoff_task::{Task, TaskId};

use crate::EngineError;

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
