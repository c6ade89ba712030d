use std::time::Duration;

use handoff_protocol::{ToolErrorBody, codes};

/// Why a tool call did not produce a result. Mapped to MCP in one place (the server crate).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// No tool of that name is visible to the caller.
    #[error("unknown tool `{name}`")]
    UnknownTool {
        /// The requested name.
        name: String,
    },
    /// Arguments failed validation; `pointer` is the JSON pointer of the bad field.
    #[error("invalid arguments for tool `{tool}`: {pointer}: {message}")]
    InvalidArguments {
        /// Tool name.
        tool: String,
        /// JSON pointer of the offending field (`""` for the whole object).
        pointer: String,
        /// What was expected.
        message: String,
    },
    /// A permission rule, hook or loop guard refused the call.
    #[error("tool `{tool}` denied: {reason}")]
    Denied {
        /// Tool name.
        tool: String,
        /// Who refused and why.
        reason: String,
    },
    /// The call ran past its deadline.
    #[error("tool `{tool}` timed out after {}ms", after.as_millis())]
    Timeout {
        /// Tool name.
        tool: String,
        /// How long it ran.
        after: Duration,
    },
    /// The caller cancelled the call.
    #[error("tool `{tool}` was cancelled")]
    Cancelled {
        /// Tool name.
        tool: String,
    },
    /// The thing asked about does not exist (or belongs to someone else).
    #[error("{what} not found")]
    NotFound {
        /// What was looked up, e.g. `task task_abc`.
        what: String,
    },
    /// Handoff is at capacity; try again later.
    #[error("{message}")]
    Busy {
        /// Machine-readable code, e.g. [`codes::QUEUE_FULL`].
        code: &'static str,
        /// Human explanation.
        message: String,
        /// Suggested wait.
        retry_after: Option<Duration>,
    },
    /// The request does not fit the current state (e.g. a message to a finished task).
    #[error("{message}")]
    Conflict {
        /// What does not fit.
        message: String,
    },
    /// The component asked cannot do this (e.g. pause on an executor without it).
    #[error("{message}")]
    Unsupported {
        /// What is not supported.
        message: String,
    },
    /// A failure inside Handoff; details are logged, not leaked.
    #[error("internal error: {message}")]
    Internal {
        /// A safe summary.
        message: String,
    },
}

impl ToolError {
    /// Stable machine-readable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::UnknownTool { .. } => codes::UNKNOWN_TOOL,
            ToolError::InvalidArguments { .. } => codes::INVALID_ARGUMENTS,
            ToolError::Denied { .. } => codes::DENIED,
            ToolError::Timeout { .. } => codes::TIMEOUT,
            ToolError::Cancelled { .. } => codes::CANCELLED,
            ToolError::NotFound { .. } => codes::NOT_FOUND,
            ToolError::Busy { code, .. } => code,
            ToolError::Conflict { .. } => codes::CONFLICT,
            ToolError::Unsupported { .. } => codes::UNSUPPORTED,
            ToolError::Internal { .. } => codes::INTERNAL,
        }
    }

    /// The JSON body reported to the caller.
    pub fn body(&self) -> ToolErrorBody {
        ToolErrorBody {
            code: self.code().to_owned(),
            message: self.to_string(),
            pointer: match self {
                ToolError::InvalidArguments { pointer, .. } => Some(pointer.clone()),
                _ => None,
            },
            retry_after_ms: match self {
                ToolError::Busy {
                    retry_after: Some(d),
                    ..
                } => Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bodies_are_the_protocol_s_error_bodies() {
        let busy = ToolError::Busy {
            code: codes::QUEUE_FULL,
            message: "the queue is full".into(),
            retry_after: Some(Duration::from_millis(1500)),
        };
        assert_eq!(
            serde_json::to_value(busy.body()).unwrap(),
            json!({"code": "QUEUE_FULL", "message": "the queue is full", "retry_after_ms": 1500})
        );
        let invalid = ToolError::InvalidArguments {
            tool: "ping".into(),
            pointer: "/message".into(),
            message: "too long".into(),
        };
        assert_eq!(
            serde_json::to_value(invalid.body()).unwrap(),
            json!({
                "code": "INVALID_ARGUMENTS",
                "message": "invalid arguments for tool `ping`: /message: too long",
                "pointer": "/message"
            })
        );
        for error in [busy, invalid, ToolError::NotFound { what: "x".into() }] {
            assert!(codes::ALL.contains(&error.code()), "{}", error.code());
        }
    }
}
