//! Requests of a working executor that wait for the task owner's answer, as stored: a
//! restarted server (or another instance) knows what was asked and until when.

use serde_json::Value;

use crate::TaskId;

/// One stored request waiting for an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingInput {
    /// The task that asked.
    pub task_id: TaskId,
    /// The executor's id for the request (answers name it).
    pub request_id: String,
    /// The request as the executor layer describes it (kind, permission, patterns, title…).
    pub request: Value,
    /// When it was asked (Unix ms); requests are answered oldest first.
    pub asked_at: i64,
    /// When it is denied unanswered (Unix ms).
    pub expires_at: i64,
}
