use std::time::Duration;

use handoff_protocol::{ToolErrorBody, codes};

use crate::excerpt::{TEXT_CHARS, clip, clip_pointer, excerpt};

/// Why a tool call did not produce a result. Mapped to MCP in one place (the server crate).
///
/// Every text a caller may have supplied is bounded when shown (an excerpt and the size, never
/// the whole value): the message goes back to the caller, into the log and into the audit row.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// No tool of that name is visible to the caller.
    #[error("unknown tool `{}`", excerpt(.name))]
    UnknownTool {
        /// The requested name.
        name: String,
    },
    /// Arguments failed validation; `pointer` is the JSON pointer of the bad field.
    #[error(
        "invalid arguments for tool `{tool}`: {}: {}",
        clip_pointer(.pointer),
        clip(.message, TEXT_CHARS)
    )]
    InvalidArguments {
        /// Tool name.
        tool: String,
        /// JSON pointer of the offending field (`""` for the whole object).
        pointer: String,
        /// What was expected.
        message: String,
    },
    /// A permission rule, hook or loop guard refused the call.
    #[error("tool `{tool}` denied: {}", clip(.reason, TEXT_CHARS))]
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
    #[error("{} not found", clip(.what, TEXT_CHARS))]
    NotFound {
        /// What was looked up, e.g. `task task_abc`.
        what: String,
    },
    /// Handoff is at capacity; try again later.
    #[error("{}", clip(.message, TEXT_CHARS))]
    Busy {
        /// Machine-readable code, e.g. [`codes::QUEUE_FULL`].
        code: &'static str,
        /// Human explanation.
        message: String,
        /// Suggested wait.
        retry_after: Option<Duration>,
    },
    /// The request does not fit the current state (e.g. a message to a finished task).
    #[error("{}", clip(.message, TEXT_CHARS))]
    Conflict {
        /// What does not fit.
        message: String,
    },
    /// The component asked cannot do this (e.g. pause on an executor without it).
    #[error("{}", clip(.message, TEXT_CHARS))]
    Unsupported {
        /// What is not supported.
        message: String,
    },
    /// The server is not set up for this (its default executor is not installed): only its
    /// operator can change that, so the fix names no other way for the caller.
    #[error("{}", clip(.message, TEXT_CHARS))]
    NotSetUp {
        /// What is missing, and what the operator must do.
        message: String,
    },
    /// A failure inside Handoff; details are logged, not leaked.
    #[error("internal error: {}", clip(.message, TEXT_CHARS))]
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
            ToolError::Unsupported { .. } | ToolError::NotSetUp { .. } => codes::UNSUPPORTED,
            ToolError::Internal { .. } => codes::INTERNAL,
        }
    }

    /// Whether the caller caused the failure (bad arguments, a refusal, an unknown id) rather
    /// than Handoff (a timeout, an internal error) or its load (`Busy`): such calls count
    /// against the caller's rate limit.
    pub fn is_callers_fault(&self) -> bool {
        matches!(
            self,
            ToolError::UnknownTool { .. }
                | ToolError::InvalidArguments { .. }
                | ToolError::Denied { .. }
                | ToolError::NotFound { .. }
                | ToolError::Conflict { .. }
                | ToolError::Unsupported { .. }
        )
    }

    /// The JSON body reported to the caller.
    pub fn body(&self) -> ToolErrorBody {
        ToolErrorBody {
            code: self.code().to_owned(),
            message: self.to_string(),
            pointer: match self {
                ToolError::InvalidArguments { pointer, .. } => {
                    Some(clip_pointer(pointer).into_owned())
                }
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

    #[test]
    fn caller_supplied_text_is_bounded_in_every_error() {
        let huge = "x".repeat(1 << 20);
        let errors = [
            ToolError::UnknownTool { name: huge.clone() },
            ToolError::InvalidArguments {
                tool: "ping".into(),
                pointer: format!("/{huge}"),
                message: huge.clone(),
            },
            ToolError::Denied {
                tool: "ping".into(),
                reason: huge.clone(),
            },
            ToolError::NotFound {
                what: format!("task {huge}"),
            },
            ToolError::Conflict {
                message: huge.clone(),
            },
        ];
        for error in errors {
            let body = serde_json::to_string(&error.body()).unwrap();
            assert!(body.len() < 1024, "{} bytes: {}", body.len(), &body[..200]);
            assert!(body.contains(" bytes)"), "{body}");
        }
    }
}
