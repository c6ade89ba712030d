//! What one hook's run means, by Claude Code's rules: exit 0 → stdout JSON (plain text is
//! ignored), exit 2 → block with stderr as the reason, anything else → a non-blocking error;
//! a timeout or a failed start is non-blocking unless the hook is fail-closed.

use serde_json::Value;

use super::{
    HookEvent, HookSpec,
    process::{ProcessEnd, ProcessOutput},
    wire::HookOutput,
};
use crate::PermissionAction;

/// One hook's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookResult {
    /// PreToolUse: allow, ask or deny.
    pub decision: Option<PermissionAction>,
    /// Why (the decision's or the block's reason).
    pub reason: Option<String>,
    /// PreToolUse: the replacement tool input.
    pub updated_input: Option<Value>,
    /// Text for the agent.
    pub additional_context: Option<String>,
    /// `continue: false`: stop the task, with this reason.
    pub stop: Option<String>,
    /// Stop / PostToolUse / TaskStart: blocked, with this reason.
    pub block: Option<String>,
    /// A non-blocking failure (logged and audited, not acted on).
    pub error: Option<String>,
}

impl HookResult {
    /// Reads one run of `spec` for `event`.
    pub fn from_run(spec: &HookSpec, event: HookEvent, run: &ProcessOutput) -> Self {
        match &run.end {
            ProcessEnd::Exited(0) => from_stdout(event, run.stdout.trim()),
            ProcessEnd::Exited(2) => {
                let reason = non_empty(run.stderr.trim())
                    .unwrap_or_else(|| format!("blocked by hook `{}`", spec.command));
                blocking(event, reason)
            }
            ProcessEnd::Exited(code) => HookResult {
                error: Some(format!(
                    "hook `{}` exited with {code}: {}",
                    spec.command,
                    run.stderr.trim()
                )),
                ..Default::default()
            },
            ProcessEnd::TimedOut | ProcessEnd::SpawnFailed(_) => {
                let what = match &run.end {
                    ProcessEnd::TimedOut => format!("timed out after {}s", spec.timeout_secs),
                    ProcessEnd::SpawnFailed(e) => format!("could not start: {e}"),
                    ProcessEnd::Exited(_) => String::new(),
                };
                let message = format!("hook `{}` {what}", spec.command);
                if spec.fail_closed {
                    blocking(event, message)
                } else {
                    HookResult {
                        error: Some(message),
                        ..Default::default()
                    }
                }
            }
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

fn blocking(event: HookEvent, reason: String) -> HookResult {
    match event {
        HookEvent::PreToolUse => HookResult {
            decision: Some(PermissionAction::Deny),
            reason: Some(reason),
            ..Default::default()
        },
        HookEvent::PostToolUse | HookEvent::Stop | HookEvent::TaskStart => HookResult {
            block: Some(reason),
            ..Default::default()
        },
        HookEvent::TaskEnd => HookResult {
            error: Some(format!("a TaskEnd hook cannot block: {reason}")),
            ..Default::default()
        },
    }
}

fn from_stdout(event: HookEvent, stdout: &str) -> HookResult {
    if !stdout.starts_with('{') {
        // Plain text on success is for the transcript only.
        return HookResult::default();
    }
    let output: HookOutput = match serde_json::from_str(stdout) {
        Ok(output) => output,
        Err(e) => {
            return HookResult {
                error: Some(format!("hook printed malformed JSON ({e}); ignored")),
                ..Default::default()
            };
        }
    };
    let mut result = HookResult::default();
    if output.continue_ == Some(false) {
        result.stop = Some(
            output
                .stop_reason
                .clone()
                .unwrap_or_else(|| "a hook asked to stop".to_owned()),
        );
    }
    let specific = output.hook_specific_output.unwrap_or_default();
    result.additional_context = specific.additional_context;
    match event {
        HookEvent::PreToolUse => {
            let decision = specific
                .permission_decision
                .as_deref()
                .or(output.decision.as_deref());
            result.decision = match decision {
                Some("allow" | "approve") => Some(PermissionAction::Allow),
                Some("ask") => Some(PermissionAction::Ask),
                Some("deny" | "block") => Some(PermissionAction::Deny),
                Some(other) => {
                    result.error = Some(format!("unknown permissionDecision `{other}`; ignored"));
                    None
                }
                None => None,
            };
            result.reason = specific.permission_decision_reason.or(output.reason);
            result.updated_input = specific.updated_input;
        }
        HookEvent::PostToolUse | HookEvent::Stop | HookEvent::TaskStart => {
            if output.decision.as_deref() == Some("block") {
                result.block = Some(
                    output
                        .reason
                        .unwrap_or_else(|| "blocked by a hook".to_owned()),
                );
            }
        }
        HookEvent::TaskEnd => {}
    }
    result
}
