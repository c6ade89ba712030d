//! How a run ends: the reasons Handoff stops a run itself, and the outcome written down when
//! the run is over.

use handoff_task::{ExitInfo, Task, TaskStatus};

/// Why a run stopped by a server shutdown failed.
const SHUT_DOWN: &str = "interrupted: server shut down";

/// Why a run is being stopped by Handoff rather than ending on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// A `cancel` control.
    Cancelled(String),
    /// The deadline passed.
    Timeout,
    /// The server is shutting down.
    Shutdown,
    /// The loop guard saw the executor repeat itself, or a hook asked to stop.
    Stuck(String),
    /// A budget cap (wall, tokens, cost) ran out while the executor was running.
    Budget(String),
    /// This instance lost the task's lease (another instance took it over, or declared this
    /// one lost): the run is killed at once and nothing more is written about it.
    Lost,
    /// The lease could not be renewed in time and the executor cannot be frozen: the run is
    /// killed at once; the task is settled as interrupted if it is still this instance's
    /// once the store answers.
    LeaseLapsed,
}

/// Why a run whose lease lapsed and which could not be frozen failed.
const LAPSED: &str =
    "interrupted: this instance could not renew the task's lease and the executor cannot be frozen";

/// Why a run this instance lost was stopped (never stored: the new owner decides the state).
pub(crate) const LOST: &str = "interrupted: this instance lost the task's lease";

/// The polite part of a timeout's stop, counted inside the deadline: the run is asked to stop
/// this long before the deadline and killed at it, so an agent that ignores SIGTERM does not
/// overshoot its deadline by the grace. Never more than half the timeout, so a short timeout
/// still lets the run work for most of it.
pub(crate) fn timeout_grace(task: &Task, cancel_grace: std::time::Duration) -> std::time::Duration {
    cancel_grace.min(std::time::Duration::from_millis(task.options.timeout_ms) / 2)
}

/// How a run ended, before it is written down.
pub(crate) struct Finish {
    pub(crate) status: TaskStatus,
    pub(crate) reason: String,
    pub(crate) exit: Option<ExitInfo>,
    pub(crate) error: Option<String>,
    /// Back to the queue instead (server shutdown of a task that opted in to re-running).
    pub(crate) requeue: bool,
}

impl Finish {
    /// The run was killed because another instance holds (or takes) its task: nothing about
    /// it may be written here.
    pub(crate) fn is_lost(&self) -> bool {
        self.error.as_deref() == Some(LOST)
    }

    pub(crate) fn failed(error: impl Into<String>) -> Self {
        let error = error.into();
        Self {
            status: TaskStatus::Failed,
            reason: error.clone(),
            exit: None,
            error: Some(error),
            requeue: false,
        }
    }
}

/// The end of a run Handoff stopped.
pub(crate) fn stopped(stop: StopReason, task: &Task, exit: Option<ExitInfo>) -> Finish {
    match stop {
        StopReason::Cancelled(reason) => Finish {
            status: TaskStatus::Cancelled,
            reason: format!("cancelled: {reason}"),
            exit,
            error: Some(format!("cancelled: {reason}")),
            requeue: false,
        },
        StopReason::Stuck(reason) => Finish {
            exit,
            ..Finish::failed(format!("stuck: {reason}"))
        },
        StopReason::Budget(reason) => Finish {
            exit,
            ..Finish::failed(format!("completion: budget_exhausted: {reason}"))
        },
        StopReason::Lost => Finish {
            exit,
            ..Finish::failed(LOST)
        },
        StopReason::LeaseLapsed => Finish {
            requeue: task.options.requeue_on_restart,
            exit,
            ..Finish::failed(LAPSED)
        },
        StopReason::Shutdown => Finish {
            requeue: task.options.requeue_on_restart,
            exit,
            ..Finish::failed(SHUT_DOWN)
        },
        StopReason::Timeout => {
            let error = format!("timed out after {}ms", task.options.timeout_ms);
            Finish {
                status: TaskStatus::Timeout,
                reason: error.clone(),
                exit,
                error: Some(error),
                requeue: false,
            }
        }
    }
}
