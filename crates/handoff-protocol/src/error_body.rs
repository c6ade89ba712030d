//! The body of a failed tool call: the text content of a `tools/call` result with
//! `isError: true` is `{"error": ToolErrorBody}`.

use serde::{Deserialize, Serialize};

/// Why a tool call failed, as the caller reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolErrorBody {
    /// Stable machine-readable code (one of [`crate::codes`]).
    pub code: String,
    /// Human explanation.
    pub message: String,
    /// The JSON pointer of a bad argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// Suggested wait before retrying, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// The whole text of an `isError` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolErrorResult {
    /// What went wrong.
    pub error: ToolErrorBody,
}
