/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A server process could not be started or did not come up.
    #[error("starting {what}: {message}")]
    Start {
        /// Which server.
        what: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A request the setup depends on failed.
    #[error("{0}")]
    Setup(String),
    /// Local I/O.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The cause.
        source: std::io::Error,
    },
}
