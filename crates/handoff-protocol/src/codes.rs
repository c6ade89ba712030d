//! The stable, machine-readable codes of failed tool calls (`code` of the body an `isError`
//! result carries in its `_meta`, see [`crate::ToolErrorBody`]; its text starts with it too).

/// No tool of that name is visible to the caller (sent as a JSON-RPC invalid-params error).
pub const UNKNOWN_TOOL: &str = "UNKNOWN_TOOL";
/// The arguments failed validation; `pointer` names the bad field.
pub const INVALID_ARGUMENTS: &str = "INVALID_ARGUMENTS";
/// A permission rule, hook or the loop guard refused the call.
pub const DENIED: &str = "DENIED";
/// The call ran past its deadline.
pub const TIMEOUT: &str = "TIMEOUT";
/// The caller cancelled the call.
pub const CANCELLED: &str = "CANCELLED";
/// The thing asked about does not exist (or belongs to someone else).
pub const NOT_FOUND: &str = "NOT_FOUND";
/// The task queue is full; retry after `retry_after_ms`.
pub const QUEUE_FULL: &str = "QUEUE_FULL";
/// The caller submits too fast; retry after `retry_after_ms`.
pub const RATE_LIMITED: &str = "RATE_LIMITED";
/// The request does not fit the current state (e.g. a message to a finished task).
pub const CONFLICT: &str = "CONFLICT";
/// The component asked cannot do this (e.g. pause on an executor without it).
pub const UNSUPPORTED: &str = "UNSUPPORTED";
/// A part Handoff needs is unreachable right now (the task store, the instance holding the
/// task's run); retry after `retry_after_ms`. Nothing was changed.
pub const UNAVAILABLE: &str = "UNAVAILABLE";
/// A failure inside Handoff.
pub const INTERNAL: &str = "INTERNAL";

/// Every code.
pub const ALL: [&str; 12] = [
    UNKNOWN_TOOL,
    INVALID_ARGUMENTS,
    DENIED,
    TIMEOUT,
    CANCELLED,
    NOT_FOUND,
    QUEUE_FULL,
    RATE_LIMITED,
    CONFLICT,
    UNSUPPORTED,
    UNAVAILABLE,
    INTERNAL,
];

/// Whether a call that failed with `code` may succeed when repeated later unchanged (Handoff was
/// at capacity, or a part it needs was unreachable).
pub fn is_retryable(code: &str) -> bool {
    matches!(code, QUEUE_FULL | RATE_LIMITED | UNAVAILABLE)
}
