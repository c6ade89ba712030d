use std::time::Duration;

use handoff_runner::RunnerError;
use handoff_store::StoreError;

/// Why the engine refused or failed a request.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No such task for this agent (other agents' tasks are reported the same way).
    #[error("task {0} not found")]
    NotFound(String),
    /// The caller may read the task but not do this to it (an observer steering).
    #[error("{0}")]
    Forbidden(String),
    /// An argument is unacceptable; `field` names it.
    #[error("{field}: {message}")]
    Invalid {
        /// The argument's name.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The backlog is full.
    #[error("the task queue is full ({queued} tasks waiting); retry later")]
    QueueFull {
        /// Tasks waiting.
        queued: u64,
        /// Suggested wait.
        retry_after: Duration,
    },
    /// The agent submits faster than its rate allows.
    #[error("too many submissions from agent {agent}; retry in {}ms", retry_after.as_millis())]
    RateLimited {
        /// The agent.
        agent: String,
        /// When a submission will be accepted again.
        retry_after: Duration,
    },
    /// The loop guard refused a submission: identical ones of the agent are still unfinished.
    #[error("identical submissions are still unfinished: {}", list(active))]
    Repeated {
        /// Those submissions, oldest first.
        active: Vec<handoff_task::TaskId>,
    },
    /// The request does not fit the task's state (e.g. a message to a finished task).
    #[error("{0}")]
    Conflict(String),
    /// The server is not set up to do this (its default executor is not installed): the
    /// operator must fix the server, not the caller its arguments.
    #[error("{0}")]
    Unavailable(String),
    /// A part the request needs is unreachable right now — the task store, or the instance
    /// holding the task's run — and nothing was changed: the caller may retry after
    /// `retry_after`.
    #[error("{message}")]
    Unreachable {
        /// What is unreachable, and what to do.
        message: String,
        /// When a retry may succeed.
        retry_after: Duration,
    },
    /// The executor cannot do this.
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// The store failed. An unreachable store becomes [`EngineError::Unreachable`] instead
    /// (see the `From` conversion).
    #[error(transparent)]
    Store(StoreError),
    /// Filesystem trouble outside the store.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Anything else that should not happen.
    #[error("{0}")]
    Internal(String),
}

/// The wait suggested to a caller while the task store is unreachable: the server probes it
/// twice a second, and a restart or a failover takes seconds.
pub(crate) const STORE_RETRY_AFTER: Duration = Duration::from_secs(2);

/// The one place a store error becomes an engine error: one that says the store cannot be
/// reached (see [`StoreError::is_unreachable`]) is the caller's `UNAVAILABLE` with a retry
/// hint, not an internal failure.
impl From<StoreError> for EngineError {
    fn from(error: StoreError) -> Self {
        match error.unreachable_cause() {
            Some(cause) => EngineError::Unreachable {
                message: format!(
                    "the task store is unreachable: {cause}; retry in {} s",
                    STORE_RETRY_AFTER.as_secs()
                ),
                retry_after: STORE_RETRY_AFTER,
            },
            None => EngineError::Store(error),
        }
    }
}

/// Task ids, comma-separated.
fn list(ids: &[handoff_task::TaskId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl EngineError {
    /// An argument error.
    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        EngineError::Invalid {
            field,
            message: message.into(),
        }
    }

    /// An I/O error with context.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EngineError::Io {
            context: context.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_store_is_the_callers_retry_not_an_internal_failure() {
        let down = StoreError::Unreachable("Connection refused (os error 111)".into());
        match EngineError::from(down) {
            EngineError::Unreachable {
                message,
                retry_after,
            } => {
                assert_eq!(retry_after, STORE_RETRY_AFTER);
                assert_eq!(
                    message,
                    "the task store is unreachable: Connection refused (os error 111); \
                     retry in 2 s"
                );
            }
            other => panic!("{other:?}"),
        }
        let refused = StoreError::Fenced { task: "t".into() };
        assert!(matches!(
            EngineError::from(refused),
            EngineError::Store(StoreError::Fenced { .. })
        ));
    }
}
