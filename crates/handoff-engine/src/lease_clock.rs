//! The lease clock's data: until when this instance's leases are known to hold, whether its
//! runs are frozen, and what a run's supervisor is told about its lease and checks on a thaw.
//! The self-fencing that moves the clock works over the engine state (`fence`); these types
//! sit in a leaf so that the instance and the supervisors can hold them without reaching up to
//! that state.

use handoff_task::{Task, unix_millis_now};
use tokio::sync::{Mutex, watch};

/// The lease clock of this instance.
pub(crate) struct LeaseClock {
    /// The earliest time any lease of this instance can run out, as last confirmed.
    pub(crate) until: watch::Sender<i64>,
    /// Freeze and thaw decisions, taken and sent one at a time, so a run never receives them
    /// out of order.
    pub(crate) state: Mutex<FenceState>,
    /// Since when (Unix ms) the store answered every beat; `None` after a failed one.
    reachable_since: std::sync::Mutex<Option<i64>>,
}

/// Whether the runs are frozen, and the number of the latest freeze.
#[derive(Default)]
pub(crate) struct FenceState {
    /// The runs are frozen because the lease was not confirmed in time.
    pub(crate) frozen: bool,
    /// Counts freezes: a run ignores a thaw check older than the latest freeze it received.
    pub(crate) epoch: u64,
}

impl Default for LeaseClock {
    fn default() -> Self {
        Self {
            until: watch::channel(i64::MAX).0,
            state: Mutex::default(),
            reachable_since: std::sync::Mutex::new(Some(unix_millis_now())),
        }
    }
}

impl LeaseClock {
    /// A beat failed: the store's silence from now on says nothing about the other instances.
    pub(crate) fn unreachable(&self) {
        *self.reachable() = None;
    }

    /// Since when the store answered every beat (Unix ms), if it answers now.
    pub(crate) fn reachable_since(&self) -> Option<i64> {
        *self.reachable()
    }

    /// Since when the store answered every beat, to update (the beats) or read.
    pub(crate) fn reachable(&self) -> std::sync::MutexGuard<'_, Option<i64>> {
        self.reachable_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What a run's supervisor is told about its lease.
#[derive(Debug, Clone)]
pub(crate) enum LeaseNotice {
    /// The lease could not be confirmed in time: freeze the run (freeze number `epoch`).
    Lapsed { epoch: u64 },
    /// A beat renewed the leases after freeze `epoch`: the task as stored now decides whether
    /// the run goes on (same owner, same fencing token, still active) or is killed.
    Renewed {
        epoch: u64,
        current: Option<Box<Task>>,
    },
}

/// Whether a frozen run whose task reads `current` now may go on: the task is still active,
/// held by the same owner under the same fencing token as when the run was claimed.
pub(crate) fn still_ours(run: &Task, current: Option<&Task>) -> bool {
    let Some(current) = current else {
        return false;
    };
    let owner = |t: &Task| t.lease.as_ref().map(|l| l.owner.clone());
    current.status.is_active() && current.fence == run.fence && owner(current) == owner(run)
}
