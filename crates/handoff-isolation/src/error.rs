//! Why isolation could not be set up.

/// An isolation failure; a task that cannot be confined as asked is refused, never run weaker.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    /// The host cannot provide what the configuration asks for.
    #[error("isolation level `{level}` is not available on this host: {reason}")]
    Unavailable {
        /// The level asked for.
        level: String,
        /// What is missing.
        reason: String,
    },
    /// A cgroup could not be created, limited, joined or removed.
    #[error("cgroup {path}: {message}")]
    Cgroup {
        /// The cgroup directory or file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Landlock or seccomp could not be applied.
    #[error("{mechanism}: {message}")]
    Confine {
        /// `landlock`, `seccomp`, `rlimit`, `prctl` …
        mechanism: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The launcher's instructions are unusable.
    #[error("launch spec: {0}")]
    Spec(String),
}
