//! What can go wrong talking to the homeserver.

/// A failed Matrix call. Messages name the route and the status, never a token or a body
/// someone else wrote.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MatrixError {
    /// The settings cannot make a client.
    #[error("matrix configuration: {0}")]
    Config(String),
    /// The homeserver could not be reached or did not answer in time.
    #[error("{route}: homeserver unreachable ({reason})")]
    Unreachable {
        /// The route.
        route: &'static str,
        /// Why, from the HTTP client.
        reason: String,
    },
    /// The homeserver answered with an error.
    #[error("{route}: HTTP {status} {errcode}")]
    Status {
        /// The route.
        route: &'static str,
        /// HTTP status.
        status: u16,
        /// Matrix `errcode` (`M_FORBIDDEN` …), when given.
        errcode: String,
        /// Matrix `error` text, clipped.
        message: String,
    },
    /// The answer was not what the spec says.
    #[error("{route}: unexpected answer: {source}")]
    Decode {
        /// The route.
        route: &'static str,
        /// What did not parse.
        #[source]
        source: std::sync::Arc<serde_json::Error>,
    },
    /// The integration is stopping.
    #[error("stopping")]
    Stopped,
}

impl MatrixError {
    /// Whether trying again later may succeed (network, rate limit, server errors).
    pub fn retryable(&self) -> bool {
        match self {
            MatrixError::Unreachable { .. } => true,
            MatrixError::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}
