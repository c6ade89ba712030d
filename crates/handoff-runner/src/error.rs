/// Why an executor could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The executor cannot do this at all (e.g. pause on an executor without it).
    #[error("{action} is not supported by the `{executor}` executor")]
    Unsupported {
        /// Executor name.
        executor: String,
        /// What was asked, e.g. `pause`.
        action: &'static str,
    },
    /// The executor is missing settings it needs.
    #[error("the `{executor}` executor is not configured: {message}")]
    NotConfigured {
        /// Executor name.
        executor: String,
        /// What to set.
        message: String,
    },
    /// The run already ended.
    #[error("the run has already finished")]
    Finished,
    /// The process could not be started.
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Talking to the running process failed.
    #[error("{context}: {message}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The cause.
        message: String,
    },
    /// The run cannot be confined as configured (never run weaker instead).
    #[error("{0}")]
    Isolation(String),
}
