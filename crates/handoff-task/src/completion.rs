//! How a task's completion is verified: the policy and the caller's criteria, stored with the
//! task.

use serde::{Deserialize, Serialize};

/// How much verification a task gets before it may be reported `completed`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CompletionPolicy {
    /// The executor stopping normally is enough.
    None,
    /// Deterministic checks (verify commands, changes, todos, stuck flags).
    #[default]
    Checks,
    /// Checks, then an external LLM judge.
    Judge,
    /// A manager plans 2–5 sub-tasks, each verified, then the whole task is judged.
    Manager,
}

impl CompletionPolicy {
    /// The policy's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CompletionPolicy::None => "none",
            CompletionPolicy::Checks => "checks",
            CompletionPolicy::Judge => "judge",
            CompletionPolicy::Manager => "manager",
        }
    }
}

/// Caps on one task's work; absent fields have no cap.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletionBudget {
    /// Wall time in milliseconds.
    pub wall_ms: Option<u64>,
    /// Executor turns (the first run and each continuation).
    pub turns: Option<u32>,
    /// Tokens (executor and judge).
    pub tokens: Option<u64>,
    /// USD (executor and judge).
    pub cost_usd: Option<f64>,
}

/// A task's verification settings (each unset field falls back to the server's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletionSpec {
    /// The policy.
    pub policy: Option<CompletionPolicy>,
    /// Commands that must exit 0 in the task directory (tests, lint, build).
    pub verify_commands: Option<Vec<String>>,
    /// The task must change files.
    pub requires_changes: Option<bool>,
    /// What "done" means, one requirement each (shown to the judge).
    #[serde(default)]
    pub success_criteria: Vec<String>,
    /// Evaluation cycles at most (continuations + 1).
    pub max_cycles: Option<u32>,
    /// Caps.
    pub budget: Option<CompletionBudget>,
    /// Files the coder must leave as they were (a directory covers its files; `*`, `**`
    /// globs), instead of the server's `completion.protected_paths`; the verify scripts and the
    /// files they name are protected either way.
    pub protected_paths: Option<Vec<String>>,
    /// The task is meant to change the protected files (it edits the tests or the verify
    /// scripts): their changes do not fail the checks.
    pub protected_changes_expected: Option<bool>,
}
