//! Why a call failed.

use std::time::Duration;

/// A failed LLM call.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The configuration cannot make a request (no endpoint, bad key characters).
    #[error("LLM client misconfigured: {0}")]
    Config(String),
    /// The provider refused the request (4xx other than 408/429): not retried.
    #[error("{provider} refused the request (HTTP {status}): {message}")]
    Refused {
        /// Provider name.
        provider: &'static str,
        /// HTTP status.
        status: u16,
        /// The provider's error message.
        message: String,
    },
    /// Retryable failures went on past the retry budget.
    #[error("{provider} kept failing after {attempts} attempts: {last}")]
    Exhausted {
        /// Provider name.
        provider: &'static str,
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// The answer did not have the expected shape.
    #[error("{provider} answered in an unexpected shape: {message}")]
    Decode {
        /// Provider name.
        provider: &'static str,
        /// What was wrong.
        message: String,
    },
    /// One attempt ran past the timeout (reported inside `Exhausted` when retried).
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}
