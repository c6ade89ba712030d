use std::time::Duration;

use serde::Serialize;

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
        /// Machine-readable code, e.g. `QUEUE_FULL`.
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

/// The JSON body a tool error is reported with (`isError: true` results).
#[derive(Debug, Serialize, PartialEq)]
pub struct ToolErrorBody {
    /// Stable machine-readable code.
    pub code: &'static str,
    /// Human explanation.
    pub message: String,
    /// The JSON pointer of a bad argument.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// Suggested wait before retrying, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ToolError {
    /// Stable machine-readable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::UnknownTool { .. } => "UNKNOWN_TOOL",
            ToolError::InvalidArguments { .. } => "INVALID_ARGUMENTS",
            ToolError::Denied { .. } => "DENIED",
            ToolError::Timeout { .. } => "TIMEOUT",
            ToolError::Cancelled { .. } => "CANCELLED",
            ToolError::NotFound { .. } => "NOT_FOUND",
            ToolError::Busy { code, .. } => code,
            ToolError::Conflict { .. } => "CONFLICT",
            ToolError::Unsupported { .. } => "UNSUPPORTED",
            ToolError::Internal { .. } => "INTERNAL",
        }
    }

    /// The JSON body reported to the caller.
    pub fn body(&self) -> ToolErrorBody {
        ToolErrorBody {
            code: self.code(),
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
