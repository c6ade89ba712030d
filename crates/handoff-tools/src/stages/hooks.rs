//! PreToolUse / PostToolUse hooks around Handoff's own tools (named `mcp__handoff__<tool>`).

use std::path::PathBuf;

use futures::future::BoxFuture;
use handoff_policy::{
    PermissionAction,
    hooks::{HookEvent, HookInput, HookRunner},
};
use serde_json::{Value, json};

use super::hook_tool_name;
use crate::{
    ToolContext, ToolDefinition, ToolError,
    pipeline::{BeforeHook, Hooks},
};

/// Runs the configured hooks in `cwd` (Handoff's data directory).
#[derive(Debug, Clone)]
pub struct CommandHooks {
    runner: HookRunner,
    cwd: PathBuf,
}

impl CommandHooks {
    /// Hooks from `runner`, run in `cwd`.
    pub fn new(runner: HookRunner, cwd: PathBuf) -> Self {
        Self { runner, cwd }
    }

    fn input(&self, event: HookEvent, ctx: &ToolContext, tool: &ToolDefinition) -> HookInput {
        let session = ctx
            .session_id
            .clone()
            .or_else(|| ctx.agent_id.as_ref().map(ToString::to_string))
            .unwrap_or_else(|| ctx.call_id.clone());
        let mut input = HookInput::new(event, session, self.cwd.display().to_string());
        input.tool_name = Some(hook_tool_name(tool.name));
        input.tool_use_id = Some(ctx.call_id.clone());
        input.agent_id = ctx.agent_id.as_ref().map(ToString::to_string);
        input
    }
}

impl Hooks for CommandHooks {
    fn before<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
        args: Value,
    ) -> BoxFuture<'a, BeforeHook> {
        Box::pin(async move {
            if !self.runner.config().has(HookEvent::PreToolUse) {
                return BeforeHook::Continue(args);
            }
            let mut input = self.input(HookEvent::PreToolUse, ctx, tool);
            input.tool_input = Some(args.clone());
            let verdict = self
                .runner
                .run(HookEvent::PreToolUse, &input, &self.cwd)
                .await;
            if let Some(stop) = verdict.stop {
                return BeforeHook::Deny(format!("a hook stopped the call: {stop}"));
            }
            let reason = verdict.reason.unwrap_or_default();
            let args = verdict.updated_input.unwrap_or(args);
            match verdict.decision {
                Some(PermissionAction::Deny) => {
                    BeforeHook::Deny(format!("denied by a PreToolUse hook: {reason}"))
                }
                Some(PermissionAction::Ask) => BeforeHook::Deny(format!(
                    "a PreToolUse hook asks for approval, and calls to Handoff's tools have no approver: {reason}"
                )),
                Some(PermissionAction::Allow) => BeforeHook::Approve(args),
                None => BeforeHook::Continue(args),
            }
        })
    }

    fn after<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
        outcome: &'a Result<Value, ToolError>,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            if !self.runner.config().has(HookEvent::PostToolUse) {
                return None;
            }
            let mut input = self.input(HookEvent::PostToolUse, ctx, tool);
            input.tool_response = Some(match outcome {
                Ok(value) => value.clone(),
                Err(e) => json!({ "error": e.to_string(), "code": e.code() }),
            });
            let verdict = self
                .runner
                .run(HookEvent::PostToolUse, &input, &self.cwd)
                .await;
            verdict.block.or(verdict.stop)
        })
    }
}
