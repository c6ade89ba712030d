//! Standing approvals an agent gave its tasks' executors ("allow `cargo test` for this task"),
//! and the audit trail of every permission decision.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AgentId, TaskId};

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalScope {
    /// The rest of one task.
    Task,
    /// Every task of the agent in the same project, until revoked.
    Project,
}

impl ApprovalScope {
    /// The scope's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalScope::Task => "task",
            ApprovalScope::Project => "project",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "task" => Some(ApprovalScope::Task),
            "project" => Some(ApprovalScope::Project),
            _ => None,
        }
    }
}

/// A standing approval: `permission` on exactly `pattern` (a command part, a path).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Approval {
    /// `ap_` + 32 hex digits.
    pub id: String,
    /// The agent that gave it (only its tasks use it).
    pub agent_id: AgentId,
    /// Task or project.
    pub scope: ApprovalScope,
    /// The task it was given in (the task it is limited to, for task scope).
    pub task_id: TaskId,
    /// The project it covers (project scope): the task's project key.
    pub project: String,
    /// The permission (`bash`, `edit` …).
    pub permission: String,
    /// What it covers.
    pub pattern: String,
    /// When it was given (Unix ms).
    pub created_at: i64,
}

/// One decision in the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditRecord {
    /// Sequence number (assigned by the store).
    pub seq: i64,
    /// When (Unix ms).
    pub at: i64,
    /// The agent the decision was about.
    pub agent_id: Option<AgentId>,
    /// The task, for executor requests and task tools.
    pub task_id: Option<TaskId>,
    /// `tool` (a Handoff MCP tool call) or `executor` (an executor's permission request).
    pub source: String,
    /// The tool or permission.
    pub subject: String,
    /// `ok`/`allow`, `deny`, `ask`, or an error code.
    pub outcome: String,
    /// The stage that decided (`permission`, `hook`, `loop_guard`, `approval`, `owner` …).
    pub stage: String,
    /// Why, in words.
    pub reason: String,
    /// Rule matched, hook verdict, approval used, call id.
    pub detail: Value,
}
