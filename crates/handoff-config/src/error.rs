use std::path::PathBuf;

use crate::layers::Source;

/// Why a configuration could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value was present but could not be parsed as the setting's type.
    #[error("invalid value {value:?} for {origin} (setting `{key}`): {reason}")]
    Invalid {
        /// Dotted setting key, e.g. `server.port`.
        key: &'static str,
        /// Where the bad value came from (names the variable, flag or file key).
        origin: Source,
        /// The raw value as given (masked for secrets).
        value: String,
        /// What was expected instead.
        reason: String,
    },
    /// The TOML file has a key Handoff does not know (likely a typo).
    #[error("unknown setting `{key}` in {path}; known settings are listed by `handoff config`")]
    UnknownKey {
        /// Dotted key as written in the file.
        key: String,
        /// The file it appeared in.
        path: PathBuf,
    },
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file that failed.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML.
    #[error("config file {path} is not valid TOML: {message}")]
    Toml {
        /// The file that failed.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// The `.env` file could not be parsed.
    #[error("cannot parse {path}: {message}")]
    DotEnv {
        /// The `.env` file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Settings that are each valid but contradict one another.
    #[error("inconsistent configuration: {0}")]
    Inconsistent(String),
}
