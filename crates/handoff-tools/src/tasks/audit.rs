use handoff_engine::{Engine, MAX_AUDIT_PAGE};
use handoff_protocol::{
    names,
    tasks::{GetAuditLogArgs, GetAuditLogOutput},
};

use super::{caller, failure::tool_error, text};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

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
        names::GET_AUDIT_LOG
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
        ctx: ToolContext,
        args: GetAuditLogArgs,
    ) -> Result<Reply<GetAuditLogOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
        let limit = args.limit.unwrap_or(50).min(MAX_AUDIT_PAGE);
        let records = self
            .engine
            .audit(&agent, args.task_id.as_ref(), args.before_seq, limit)
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let next_before_seq = (records.len() == limit as usize)
            .then(|| records.last().map(|r| r.seq))
            .flatten();
        let output = GetAuditLogOutput {
            records,
            next_before_seq,
        };
        let text = text::audit_log(&output, args.task_id.as_ref());
        Ok(Reply::new(output, text))
    }
}
