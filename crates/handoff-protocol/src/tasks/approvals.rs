//! `list_approvals` and `revoke_approval`: the standing approvals a caller gave.

use handoff_task::{AgentId, Approval, TaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{call::tool_call, names};

/// Arguments of `list_approvals`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListApprovalsArgs {
    /// Calling agent (defaults to the x-agent-id header); only its approvals are listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Only approvals given in this task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
}

/// Result of `list_approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListApprovalsOutput {
    /// Standing approvals, oldest first.
    pub approvals: Vec<Approval>,
}

/// Arguments of `revoke_approval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeApprovalArgs {
    /// Calling agent (defaults to the x-agent-id header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The approval (`id` from list_approvals).
    #[schemars(regex(pattern = r"^ap_[0-9a-f]{32}$"))]
    pub approval_id: String,
}

/// Result of `revoke_approval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RevokeApprovalOutput {
    /// The approval that was removed.
    pub revoked: Approval,
    /// What happens now.
    pub message: String,
}

tool_call! {
    ListApprovalsArgs => names::LIST_APPROVALS, ListApprovalsOutput;
    RevokeApprovalArgs => names::REVOKE_APPROVAL, RevokeApprovalOutput;
}
