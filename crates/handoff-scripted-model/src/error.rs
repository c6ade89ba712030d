//! The crate's error type.

use std::path::PathBuf;

/// What can go wrong loading a script or starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The script file could not be read.
    #[error("cannot read script {path}: {source}")]
    ReadScript {
        /// The script file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The script is not valid JSON of the expected shape.
    #[error("invalid script: {source}")]
    ParseScript {
        /// The parse error, with line and column.
        #[from]
        source: serde_json::Error,
    },
    /// A scripted error reply names a status that is not an HTTP error status.
    #[error("scenario {scenario:?}: error status {status} is not in 400..=599")]
    InvalidStatus {
        /// The scenario's label (`default` / `untooled` for those replies).
        scenario: String,
        /// The offending status.
        status: u16,
    },
    /// The request log file could not be opened for appending.
    #[error("cannot open request log {path}: {source}")]
    OpenLog {
        /// The log file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The listening socket could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The requested port (0 = any free port).
        port: u16,
        /// The underlying I/O error.
        source: std::io::Error,
    },
}
