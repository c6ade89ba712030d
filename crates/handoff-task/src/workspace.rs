//! A task's workspace memory block in its agent's Letta memory, and what Handoff still owes it:
//! the durable record that lets block writes, the completion notification, detach and delete
//! resume exactly where they stopped after a restart.

use std::{fmt, str::FromStr};

use crate::{AgentId, TaskId};

/// Where a task's workspace block is in its life. Moves only forward:
/// `creating → attached → final → detached → deleted`, and any state before `deleted` may end
/// `abandoned` (the agent is gone, or retention ran out before Letta answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockPhase {
    /// The block is not (known to be) created and attached yet.
    Creating,
    /// The block is attached and kept current while the task runs.
    Attached,
    /// The block holds the task's final state; it will be detached at `detach_at`.
    Final,
    /// Detached from the agent; it will be deleted at `delete_at`.
    Detached,
    /// Deleted from Letta. Nothing more to do.
    Deleted,
    /// Given up on (the reason is in `last_error`). Nothing more to do.
    Abandoned,
}

impl BlockPhase {
    /// Every phase, in order.
    pub const ALL: [BlockPhase; 6] = [
        BlockPhase::Creating,
        BlockPhase::Attached,
        BlockPhase::Final,
        BlockPhase::Detached,
        BlockPhase::Deleted,
        BlockPhase::Abandoned,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockPhase::Creating => "creating",
            BlockPhase::Attached => "attached",
            BlockPhase::Final => "final",
            BlockPhase::Detached => "detached",
            BlockPhase::Deleted => "deleted",
            BlockPhase::Abandoned => "abandoned",
        }
    }

    /// Whether the task's writer still has work (create, update, final write).
    pub fn is_live(self) -> bool {
        matches!(self, BlockPhase::Creating | BlockPhase::Attached)
    }
}

impl fmt::Display for BlockPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BlockPhase {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown block phase {s:?}"))
    }
}

/// Whether the agent is (still) owed its completion notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NotifyState {
    /// One message is owed once the task ends; none has been attempted.
    Pending,
    /// Still owed, and an attempt was made whose outcome Handoff never heard: the message may
    /// have reached Letta, so look for it before sending again.
    Sending,
    /// The message reached Letta. Never sent again.
    Sent,
    /// Not wanted (the task's `notify: false`, or notifications are off).
    Off,
    /// Given up on (the reason is in `last_error`).
    Failed,
}

impl NotifyState {
    /// Every state.
    pub const ALL: [NotifyState; 5] = [
        NotifyState::Pending,
        NotifyState::Sending,
        NotifyState::Sent,
        NotifyState::Off,
        NotifyState::Failed,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyState::Pending => "pending",
            NotifyState::Sending => "sending",
            NotifyState::Sent => "sent",
            NotifyState::Off => "off",
            NotifyState::Failed => "failed",
        }
    }

    /// Whether the message is still owed (none attempted, or one whose outcome is unknown).
    pub fn is_owed(self) -> bool {
        matches!(self, NotifyState::Pending | NotifyState::Sending)
    }
}

impl FromStr for NotifyState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown notify state {s:?}"))
    }
}

/// The durable record of one task's workspace block and notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRecord {
    /// The task.
    pub task_id: TaskId,
    /// The Letta agent whose memory holds the block.
    pub agent_id: AgentId,
    /// The block's label, unique per agent (`handoff_task_<id>`).
    pub label: String,
    /// Letta's id of the block, once created.
    pub block_id: Option<String>,
    /// Where the block is in its life.
    pub phase: BlockPhase,
    /// The completion notification.
    pub notify: NotifyState,
    /// Letta's run id of the notification, when sent through the async endpoint.
    pub notify_run_id: Option<String>,
    /// Block writes that reached Letta (create included).
    pub writes: u64,
    /// Bytes of block values those writes carried.
    pub bytes_written: u64,
    /// When to detach (Unix ms), once final.
    pub detach_at: Option<i64>,
    /// When to delete (Unix ms), once detached.
    pub delete_at: Option<i64>,
    /// The last failure talking to Letta about this task.
    pub last_error: Option<String>,
    /// When the record was made (Unix ms).
    pub created_at: i64,
    /// When it last changed (Unix ms).
    pub updated_at: i64,
}

impl WorkspaceRecord {
    /// Starts the record over for a follow-up round of its task at `now`: the block is kept
    /// current again (re-attached when it was detached, made anew when it is gone) and the
    /// round's end is owed its own notification (`notify`).
    pub fn next_round(&mut self, notify: NotifyState, now: i64) {
        self.phase = match self.phase {
            BlockPhase::Attached | BlockPhase::Final => BlockPhase::Attached,
            BlockPhase::Creating | BlockPhase::Detached => BlockPhase::Creating,
            BlockPhase::Deleted | BlockPhase::Abandoned => {
                self.block_id = None;
                BlockPhase::Creating
            }
        };
        self.notify = notify;
        self.notify_run_id = None;
        self.detach_at = None;
        self.delete_at = None;
        self.last_error = None;
        self.updated_at = now;
    }

    /// Whether the record is done with its task's current round: the block holds the final
    /// state (or is gone) and the notification was settled.
    pub fn round_done(&self) -> bool {
        matches!(
            self.phase,
            BlockPhase::Final | BlockPhase::Detached | BlockPhase::Deleted | BlockPhase::Abandoned
        ) || matches!(self.notify, NotifyState::Sent | NotifyState::Failed)
    }

    /// The record of a task whose block is still to be created, made at `now` (Unix ms).
    pub fn new(task_id: TaskId, agent_id: AgentId, notify: NotifyState, now: i64) -> Self {
        Self {
            label: Self::label_for(&task_id),
            task_id,
            agent_id,
            block_id: None,
            phase: BlockPhase::Creating,
            notify,
            notify_run_id: None,
            writes: 0,
            bytes_written: 0,
            detach_at: None,
            delete_at: None,
            last_error: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// The block label of a task: unique per agent, so a second task never collides (409).
    pub fn label_for(task: &TaskId) -> String {
        format!("handoff_{task}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in BlockPhase::ALL {
            assert_eq!(p.as_str().parse::<BlockPhase>(), Ok(p));
        }
        for n in NotifyState::ALL {
            assert_eq!(n.as_str().parse::<NotifyState>(), Ok(n));
        }
        assert!("gone".parse::<BlockPhase>().is_err());
    }

    #[test]
    fn labels_name_the_task() {
        let id = TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap();
        // Task ids start with `task_`, so the label reads `handoff_task_<id>`.
        assert_eq!(
            WorkspaceRecord::label_for(&id),
            "handoff_task_abcdefghijklmnopqrstuvwxyz"
        );
        assert!(WorkspaceRecord::label_for(&id).len() <= 50);
    }

    #[test]
    fn a_follow_up_round_keeps_a_live_block_and_owes_a_new_notification() {
        let id = TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap();
        let agent = AgentId::parse("agent-1").unwrap();
        let mut record = WorkspaceRecord::new(id, agent, NotifyState::Pending, 1);
        assert!(!record.round_done());
        record.block_id = Some("block-1".to_owned());
        record.phase = BlockPhase::Final;
        record.notify = NotifyState::Sent;
        record.detach_at = Some(9);
        assert!(record.round_done());
        record.next_round(NotifyState::Pending, 5);
        assert_eq!(record.phase, BlockPhase::Attached);
        assert_eq!(record.block_id.as_deref(), Some("block-1"));
        assert_eq!(
            (record.notify, record.detach_at),
            (NotifyState::Pending, None)
        );
        record.phase = BlockPhase::Detached;
        record.next_round(NotifyState::Off, 6);
        assert_eq!(record.phase, BlockPhase::Creating);
        assert_eq!(record.block_id.as_deref(), Some("block-1"), "re-attached");
        record.phase = BlockPhase::Deleted;
        record.next_round(NotifyState::Pending, 7);
        assert_eq!(
            (record.phase, record.block_id),
            (BlockPhase::Creating, None)
        );
    }
}
