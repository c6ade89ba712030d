//! Commands left for a lost holder: the instance that took the task over takes every command
//! still waiting about it, whoever it was posted to, before it decides the task's state. A
//! recorded cancel is honoured (the task ends `cancelled`, never re-queued); anything else is
//! answered as finding no run, so its caller settles it as it would for a run that vanished.

use handoff_protocol::TaskCommand;
use handoff_task::{TaskId, unix_millis_now};

use super::wire::{Posted, WireReply};
use crate::{EngineError, state::EngineState};

/// Takes the commands waiting about task `id`; the reason of a cancel among them, if any.
/// Each is answered once the rescuer's decision is written ([`answer_rescued`]).
pub(crate) async fn take_rescued(state: &EngineState, id: &TaskId) -> Result<Rescued, EngineError> {
    let taken = state
        .store
        .take_task_commands(id, unix_millis_now())
        .await?;
    let mut rescued = Rescued {
        taken: Vec::with_capacity(taken.len()),
        cancel: None,
    };
    for command in taken {
        let reason = match serde_json::from_str(&command.body) {
            Ok(Posted::Command(TaskCommand::Cancel { reason })) => Some(reason),
            _ => None,
        };
        rescued.taken.push((command.id, reason.is_some()));
        if rescued.cancel.is_none() {
            rescued.cancel = reason;
        }
    }
    Ok(rescued)
}

/// The commands a rescuer took about one task.
pub(crate) struct Rescued {
    /// Each command's id, and whether it is a cancel.
    taken: Vec<(i64, bool)>,
    /// The reason of the first cancel among them.
    pub cancel: Option<String>,
}

/// Answers the commands taken about a rescued task: a cancel reads as stopping (the task is
/// cancelled by now), the rest as finding no run.
pub(crate) async fn answer_rescued(state: &EngineState, rescued: &Rescued, cancelled: bool) {
    for (id, cancel) in &rescued.taken {
        let reply = if *cancel && cancelled {
            WireReply::Stopping
        } else {
            WireReply::NoRun
        };
        let Ok(text) = serde_json::to_string(&reply) else {
            continue;
        };
        if let Err(e) = state
            .store
            .reply_command(*id, &text, unix_millis_now())
            .await
        {
            tracing::warn!(command = id, error = %e, "could not answer a rescued command");
        }
    }
}
