//! `get_audit_log`: every permission decision about a caller's calls and tasks.

use handoff_task::{AgentId, AuditRecord, TaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{call::tool_call, names};

/// Arguments of `get_audit_log`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAuditLogArgs {
    /// Calling agent (defaults to the x-agent-id header); only its records are read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Only decisions about this task (its executor's requests and tool calls naming it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// `next_before_seq` of the previous page.
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_seq: Option<i64>,
    /// Page size (default 50, at most 500).
    #[schemars(range(min = 1, max = 500))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// Result of `get_audit_log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GetAuditLogOutput {
    /// Decisions, newest first.
    pub records: Vec<AuditRecord>,
    /// Pass as `before_seq` for older records; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before_seq: Option<i64>,
}

tool_call! {
    GetAuditLogArgs => names::GET_AUDIT_LOG, GetAuditLogOutput;
}
