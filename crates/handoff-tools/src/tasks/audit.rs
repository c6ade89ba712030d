use handoff_engine::{Engine, MAX_AUDIT_PAGE};
use handoff_task::{AuditRecord, TaskId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{caller, failure::tool_error};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// Arguments of `get_audit_log`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAuditLogArgs {
    /// Calling agent (defaults to the x-agent-id header); only its records are read.
    pub agent_id: Option<AgentId>,
    /// Only decisions about this task (its executor's requests and tool calls naming it).
    pub task_id: Option<TaskId>,
    /// `next_before_seq` of the previous page.
    #[schemars(range(min = 1))]
    pub before_seq: Option<i64>,
    /// Page size (default 50, at most 500).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

/// Result of `get_audit_log`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GetAuditLogOutput {
    /// Decisions, newest first.
    pub records: Vec<AuditRecord>,
    /// Pass as `before_seq` for older records; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before_seq: Option<i64>,
}

/// `get_audit_log`: every permission decision about your calls and your tasks' executors.
pub struct GetAuditLogTool {
    engine: Engine,
}

impl GetAuditLogTool {
    /// A tool reading from `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for GetAuditLogTool {
    type Args = GetAuditLogArgs;
    type Output = GetAuditLogOutput;

    fn name(&self) -> &'static str {
        "get_audit_log"
    }

    fn description(&self) -> &'static str {
        "Read the audit trail, newest first: each decision on your tool calls and on your \
         tasks' executors' permission requests — outcome, the stage that decided (permission \
         rule, hook, loop guard, standing approval, owner, timeout), why, and the rule matched."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        _ctx: ToolContext,
        args: GetAuditLogArgs,
    ) -> Result<GetAuditLogOutput, ToolError> {
        let agent = caller(self.name(), args.agent_id)?;
        let limit = args.limit.unwrap_or(50).min(MAX_AUDIT_PAGE);
        let records = self
            .engine
            .audit(&agent, args.task_id.as_ref(), args.before_seq, limit)
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let next_before_seq = (records.len() == limit as usize)
            .then(|| records.last().map(|r| r.seq))
            .flatten();
        Ok(GetAuditLogOutput {
            records,
            next_before_seq,
        })
    }
}
