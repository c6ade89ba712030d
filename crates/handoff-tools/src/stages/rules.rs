//! Which of Handoff's tools an agent may see and call, and with which arguments.

use futures::future::BoxFuture;
use handoff_policy::{Layer, PermissionAction, PermissionRule, RuleStack};

use crate::{
    AgentId, ToolContext, ToolDefinition,
    pipeline::{Decision, PermissionPolicy, PermissionRequest},
};

/// The operator's rules for Handoff's tools (permission = tool name, pattern = `key=value`).
#[derive(Debug, Clone)]
pub struct RulePermissions {
    stack: RuleStack,
}

impl RulePermissions {
    /// Every tool allowed by default, then `rules` (rules naming an `agent` apply to it only).
    pub fn new(rules: &[PermissionRule]) -> Self {
        let defaults = [PermissionRule::new("*", "*", PermissionAction::Allow)];
        Self {
            stack: RuleStack::new()
                .with_layer(Layer::Defaults, &defaults)
                .with_layer(Layer::Global, rules),
        }
    }
}

impl PermissionPolicy for RulePermissions {
    fn visible(&self, agent: Option<&AgentId>, tool: &ToolDefinition) -> bool {
        !self.stack.hidden(tool.name, agent.map(AgentId::as_str))
    }

    fn decide<'a>(
        &'a self,
        ctx: &'a ToolContext,
        request: &'a PermissionRequest,
    ) -> BoxFuture<'a, Decision> {
        let verdict = self.stack.evaluate(
            &handoff_policy::PermissionRequest {
                permission: &request.permission,
                patterns: &request.patterns,
                agent: ctx.agent_id.as_ref().map(AgentId::as_str),
                cwd: None,
                headless: false,
            },
            &[],
        );
        let decision = match verdict.action {
            PermissionAction::Allow => Decision::Allow,
            PermissionAction::Ask => Decision::Ask(verdict.reason()),
            PermissionAction::Deny => Decision::Deny(verdict.reason()),
        };
        Box::pin(async move { decision })
    }
}
