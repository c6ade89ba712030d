use std::time::Duration;

/// Why a call to Letta failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LettaError {
    /// The settings cannot make a client (bad URL, TLS setup).
    #[error("invalid Letta settings: {0}")]
    Config(String),
    /// Letta does not know the agent, block or run (404).
    #[error("Letta: {what}: not found ({detail})")]
    NotFound {
        /// The call.
        what: &'static str,
        /// Letta's `detail`.
        detail: String,
    },
    /// Letta refused because of a clash (409), e.g. the agent already has a block with the label.
    #[error("Letta: {what}: conflict ({detail})")]
    Conflict {
        /// The call.
        what: &'static str,
        /// Letta's `detail`.
        detail: String,
    },
    /// Letta refused the request for good (a 4xx other than 404, 408, 409, 429).
    #[error("Letta: {what}: refused with HTTP {status} ({detail})")]
    Refused {
        /// The call.
        what: &'static str,
        /// The HTTP status.
        status: u16,
        /// Letta's `detail`.
        detail: String,
    },
    /// Every attempt failed with something worth retrying (408/429/5xx, timeout, connection).
    #[error("Letta: {what}: gave up after {attempts} attempts, last: {last}")]
    Exhausted {
        /// The call.
        what: &'static str,
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// The answer was not the JSON expected.
    #[error("Letta: {what}: unexpected answer ({message})")]
    Decode {
        /// The call.
        what: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The integration is shutting down.
    #[error("Letta: {what}: stopped (shutting down)")]
    Stopped {
        /// The call.
        what: &'static str,
    },
}

impl LettaError {
    /// Whether trying again later cannot help (the agent or block is gone, the request is bad).
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            LettaError::Config(_) | LettaError::NotFound { .. } | LettaError::Refused { .. }
        )
    }

    /// Whether the server lacks the route itself (an older or trimmed Letta): its 404 says
    /// just "Not Found", where an unknown agent, block or run is named.
    pub fn is_missing_route(&self) -> bool {
        matches!(self, LettaError::NotFound { detail, .. } if detail == "Not Found")
    }
}

/// A failure worth another attempt, and how long Letta asked us to wait.
#[derive(Debug, Clone)]
pub(crate) struct Transient {
    pub message: String,
    pub retry_after: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_route_is_told_from_a_missing_agent() {
        let not_found = |detail: &str| LettaError::NotFound {
            what: "send message (async)",
            detail: detail.to_owned(),
        };
        assert!(not_found("Not Found").is_missing_route());
        assert!(!not_found("Agent agent-1 not found").is_missing_route());
        let refused = LettaError::Refused {
            what: "list active runs",
            status: 405,
            detail: "Not Found".to_owned(),
        };
        assert!(!refused.is_missing_route());
    }
}
