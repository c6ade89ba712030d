//! The real pipeline stages, built on `handoff_policy`: permission rules per agent (and a
//! blanket deny hides a tool), the loop guard, Claude-Code-compatible hooks, output caps with
//! spill-to-disk, the audit trail in the store, and the rate that failed calls are charged to.

mod audit;
mod failures;
mod guard;
mod hooks;
mod limiter;
mod rules;

pub use audit::StoreAudit;
pub use failures::SubmissionRateForFailures;
pub use guard::CallLoopGuard;
pub(crate) use guard::digest;
pub use hooks::CommandHooks;
pub use limiter::SpillLimiter;
pub use rules::RulePermissions;

/// The name hooks see for one of Handoff's own tools (Claude Code's MCP tool naming).
pub fn hook_tool_name(tool: &str) -> String {
    format!("mcp__handoff__{tool}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
