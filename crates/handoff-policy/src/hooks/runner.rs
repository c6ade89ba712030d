//! Runs the hooks that match an event, in parallel (identical commands once), and merges their
//! answers: deny > ask > allow; the first rewritten input in configuration order; any stop or
//! block wins. A hook's allow only ever skips a prompt — the permission rules still apply.

use std::path::Path;

use serde_json::Value;

use super::{HookEvent, HookInput, HookResult, HooksConfig, process::run_command};
use crate::PermissionAction;

/// The merged answer of every hook that ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookVerdict {
    /// PreToolUse: the strictest decision given.
    pub decision: Option<PermissionAction>,
    /// The reasons given with the deciding answers (or the block).
    pub reason: Option<String>,
    /// PreToolUse: the replacement input.
    pub updated_input: Option<Value>,
    /// Context for the agent, from every hook.
    pub additional_context: Vec<String>,
    /// A hook asked to stop the task.
    pub stop: Option<String>,
    /// A hook blocked (Stop: the continuation prompt; TaskStart: the refusal).
    pub block: Option<String>,
    /// Non-blocking failures.
    pub errors: Vec<String>,
    /// The commands that ran.
    pub ran: Vec<String>,
}

/// The configured hooks, ready to run.
#[derive(Debug, Clone, Default)]
pub struct HookRunner {
    config: HooksConfig,
}

impl HookRunner {
    /// Runs `config`'s hooks.
    pub fn new(config: HooksConfig) -> Self {
        Self { config }
    }

    /// The configuration.
    pub fn config(&self) -> &HooksConfig {
        &self.config
    }

    /// Runs every hook for `event` matching `input.tool_name`, in `cwd`.
    pub async fn run(&self, event: HookEvent, input: &HookInput, cwd: &Path) -> HookVerdict {
        let mut specs = Vec::new();
        for spec in &self.config.hooks {
            let same = |s: &&super::HookSpec| s.command == spec.command;
            if spec.event == event
                && spec.matches(input.tool_name.as_deref())
                && !specs.iter().any(same)
            {
                specs.push(spec);
            }
        }
        if specs.is_empty() {
            return HookVerdict::default();
        }
        let stdin = serde_json::to_vec(input).unwrap_or_default();
        let runs = futures::future::join_all(specs.iter().map(|spec| {
            let stdin = stdin.clone();
            async move { run_command(&spec.command, cwd, &stdin, spec.timeout()).await }
        }))
        .await;
        let results: Vec<HookResult> = specs
            .iter()
            .zip(&runs)
            .map(|(spec, run)| HookResult::from_run(spec, event, run))
            .collect();
        let mut verdict = merge(&results);
        verdict.ran = specs.iter().map(|s| s.command.clone()).collect();
        for error in &verdict.errors {
            tracing::warn!(event = event.as_str(), error = %error, "hook failed (not blocking)");
        }
        verdict
    }
}

/// Merges answers given in configuration order.
pub(crate) fn merge(results: &[HookResult]) -> HookVerdict {
    let mut verdict = HookVerdict::default();
    let decision = results.iter().filter_map(|r| r.decision).max();
    verdict.decision = decision;
    let reasons: Vec<String> = results
        .iter()
        .filter(|r| r.decision.is_some() && r.decision == decision)
        .filter_map(|r| r.reason.clone())
        .collect();
    if !reasons.is_empty() {
        verdict.reason = Some(reasons.join("; "));
    }
    if decision != Some(PermissionAction::Deny) {
        verdict.updated_input = results.iter().find_map(|r| r.updated_input.clone());
    }
    verdict.additional_context = results
        .iter()
        .filter_map(|r| r.additional_context.clone())
        .collect();
    verdict.stop = results.iter().find_map(|r| r.stop.clone());
    let blocks: Vec<String> = results.iter().filter_map(|r| r.block.clone()).collect();
    if !blocks.is_empty() {
        verdict.block = Some(blocks.join("\n"));
    }
    verdict.errors = results.iter().filter_map(|r| r.error.clone()).collect();
    verdict
}
