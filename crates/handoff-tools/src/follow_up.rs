//! What a task's owner hears about it without asking. An integration the composition root
//! plugs in (Letta's workspace blocks and end-of-task messages) knows; the tools only ask, so
//! their texts can tell an agent whether polling is needed — without this crate knowing Letta.

use handoff_task::Task;

/// Tells, per task, what its owner is told without asking.
pub trait FollowUps: Send + Sync {
    /// What the owner of `task` hears about it by itself.
    fn for_task(&self, task: &Task) -> FollowUp;
}

/// What a task's owner gets without asking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowUp {
    /// The label of a memory block kept current with the task's progress, once it starts.
    pub memory_block: Option<String>,
    /// One message to the owner when the task ends.
    pub message_at_end: bool,
}

/// For instances without such an integration: owners hear nothing unasked.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoFollowUps;

impl FollowUps for NoFollowUps {
    fn for_task(&self, _: &Task) -> FollowUp {
        FollowUp::default()
    }
}
