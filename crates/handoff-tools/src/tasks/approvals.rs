use handoff_engine::Engine;
use handoff_protocol::{
    names,
    tasks::{ListApprovalsArgs, ListApprovalsOutput, RevokeApprovalArgs, RevokeApprovalOutput},
};

use super::{caller, failure::tool_error, text};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

/// `list_approvals`: the standing approvals you gave your tasks' executors.
pub struct ListApprovalsTool {
    engine: Engine,
}

impl ListApprovalsTool {
    /// A tool reading from `engine`.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for ListApprovalsTool {
    type Args = ListApprovalsArgs;
    type Output = ListApprovalsOutput;

    fn name(&self) -> &'static str {
        names::LIST_APPROVALS
    }

    fn description(&self) -> &'static str {
        "List the standing approvals you gave (an approval answered with scope `task` or \
         `project`): each allows exactly one command part or path for one permission, for the \
         rest of a task or for every task of yours in the same project. Revoke with \
         revoke_approval."
    }

    fn annotations(&self) -> ToolAnnotations {
        super::read_only()
    }

    async fn call(
        &self,
        ctx: ToolContext,
        args: ListApprovalsArgs,
    ) -> Result<Reply<ListApprovalsOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
        let approvals = self
            .engine
            .list_approvals(&agent, args.task_id.as_ref())
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let output = ListApprovalsOutput { approvals };
        let text = text::approvals(&output, args.task_id.as_ref());
        Ok(Reply::new(output, text))
    }
}

/// `revoke_approval`: removes a standing approval.
pub struct RevokeApprovalTool {
    engine: Engine,
}

impl RevokeApprovalTool {
    /// A tool changing `engine`'s approvals.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

impl Tool for RevokeApprovalTool {
    type Args = RevokeApprovalArgs;
    type Output = RevokeApprovalOutput;

    fn name(&self) -> &'static str {
        names::REVOKE_APPROVAL
    }

    fn description(&self) -> &'static str {
        "Revoke one of your standing approvals: the next matching request of an executor is \
         judged by the rules again (and asked, where they ask)."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            destructive: true,
            idempotent: false,
            ..ToolAnnotations::default()
        }
    }

    async fn call(
        &self,
        ctx: ToolContext,
        args: RevokeApprovalArgs,
    ) -> Result<Reply<RevokeApprovalOutput>, ToolError> {
        let agent = caller(&ctx, self.name())?;
        let revoked = self
            .engine
            .revoke_approval(agent.name(), &args.approval_id)
            .await
            .map_err(|e| tool_error(self.name(), e))?;
        let message = format!(
            "revoked: {} on `{}` ({} scope) now goes by the rules again",
            revoked.permission,
            revoked.pattern,
            revoked.scope.as_str()
        );
        let output = RevokeApprovalOutput { revoked, message };
        let text = text::revoked(&output);
        Ok(Reply::new(output, text))
    }
}
