use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// Where a task is in its life. Every change goes through [`TaskStatus::transition`].
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Waiting for a free slot.
    Queued,
    /// An executor is working on it.
    Running,
    /// Frozen by a `pause` control; holds its slot.
    Paused,
    /// The executor waits for an answer from the agent; holds its slot.
    InputRequired,
    /// The executor finished successfully.
    Completed,
    /// The executor failed, or Handoff could not run it.
    Failed,
    /// The task ran past its deadline and was stopped.
    Timeout,
    /// Stopped on request.
    Cancelled,
}

/// A move the state machine forbids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a task cannot go from `{from}` to `{to}`")]
pub struct IllegalTransition {
    /// The current state.
    pub from: TaskStatus,
    /// The refused target.
    pub to: TaskStatus,
}

/// A string that names no state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown task status {0:?}")]
pub struct UnknownStatus(pub String);

impl TaskStatus {
    /// Every state, in lifecycle order.
    pub const ALL: [TaskStatus; 8] = [
        TaskStatus::Queued,
        TaskStatus::Running,
        TaskStatus::Paused,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Timeout,
        TaskStatus::Cancelled,
    ];

    /// States that hold a concurrency slot.
    pub const ACTIVE: [TaskStatus; 3] = [
        TaskStatus::Running,
        TaskStatus::Paused,
        TaskStatus::InputRequired,
    ];

    /// The one table of legal moves.
    pub fn can_become(self, to: TaskStatus) -> bool {
        use TaskStatus::*;
        matches!(
            (self, to),
            (Queued, Running | Cancelled | Failed)
                | (
                    Running,
                    Completed | Failed | Timeout | Cancelled | Paused | InputRequired
                )
                | (Paused, Running | Failed | Timeout | Cancelled)
                | (InputRequired, Running | Failed | Timeout | Cancelled)
        )
    }

    /// Checks a move; terminal states never change.
    pub fn transition(self, to: TaskStatus) -> Result<TaskStatus, IllegalTransition> {
        if self.can_become(to) {
            Ok(to)
        } else {
            Err(IllegalTransition { from: self, to })
        }
    }

    /// Where an unfinished task goes when the server that ran it died: back to the queue if it
    /// never started or opted in to re-queueing, otherwise `failed`. Terminal states stay put.
    pub fn after_restart(self, requeue: bool) -> TaskStatus {
        match self {
            TaskStatus::Queued => TaskStatus::Queued,
            s if s.is_terminal() => s,
            _ if requeue => TaskStatus::Queued,
            _ => TaskStatus::Failed,
        }
    }

    /// The task has ended and will never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed
                | TaskStatus::Failed
                | TaskStatus::Timeout
                | TaskStatus::Cancelled
        )
    }

    /// The task holds a concurrency slot.
    pub fn is_active(self) -> bool {
        Self::ACTIVE.contains(&self)
    }

    /// The state's name on the wire and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Paused => "paused",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Timeout => "timeout",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::TaskStatus::{self, *};

    #[test]
    fn the_documented_moves_are_legal() {
        for (from, to) in [
            (Queued, Running),
            (Queued, Cancelled),
            (Running, Completed),
            (Running, Failed),
            (Running, Timeout),
            (Running, Cancelled),
            (Running, Paused),
            (Paused, Running),
            (Running, InputRequired),
            (InputRequired, Running),
            (Paused, Cancelled),
        ] {
            assert_eq!(from.transition(to), Ok(to), "{from} -> {to}");
        }
    }

    #[test]
    fn terminal_states_never_change() {
        for from in TaskStatus::ALL.into_iter().filter(|s| s.is_terminal()) {
            for to in TaskStatus::ALL {
                assert!(from.transition(to).is_err(), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn illegal_moves_are_refused() {
        for (from, to) in [
            (Queued, Completed),
            (Queued, Paused),
            (Queued, Queued),
            (Running, Queued),
            (Running, Running),
            (Paused, Paused),
            (Paused, InputRequired),
            (Cancelled, Completed),
            (Completed, Cancelled),
        ] {
            let err = from.transition(to).unwrap_err();
            assert_eq!((err.from, err.to), (from, to));
        }
    }

    #[test]
    fn restart_fails_or_requeues_unfinished_work_only() {
        assert_eq!(Running.after_restart(false), Failed);
        assert_eq!(Paused.after_restart(true), Queued);
        assert_eq!(Queued.after_restart(false), Queued);
        assert_eq!(Cancelled.after_restart(true), Cancelled);
    }

    #[test]
    fn names_round_trip() {
        for status in TaskStatus::ALL {
            assert_eq!(status.as_str().parse::<TaskStatus>(), Ok(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(status.as_str())
            );
        }
        assert!("done".parse::<TaskStatus>().is_err());
    }
}
