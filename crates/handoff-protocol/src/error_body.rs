//! A failed tool call: a `tools/call` result with `isError: true` whose text tells a model what
//! went wrong and how to fix it (`Error CODE: … Fix: …`), and whose `_meta` carries the
//! machine-readable body for programs: `{"handoff/error": ToolErrorBody}`.

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

/// The `_meta` key of an `isError` result that holds its [`ToolErrorBody`].
pub const ERROR_META_KEY: &str = "handoff/error";

/// The `_meta` of an `isError` result (other keys may sit beside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolErrorMeta {
    /// What went wrong.
    #[serde(rename = "handoff/error")]
    pub error: ToolErrorBody,
}
