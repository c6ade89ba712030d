//! A task's effective completion settings: its own (`execute_task {completion}`) where given,
//! else the server's. Read by the evaluator, the budget meter and the run lifecycle; held
//! nowhere, computed from the task and the configuration each time.

use std::time::Duration;

use handoff_completion::budget::Budget;
use handoff_task::{CompletionPolicy, Task};

use crate::state::EngineState;

/// A task's effective verification settings.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub policy: CompletionPolicy,
    pub verify_commands: Vec<String>,
    pub requires_changes: bool,
    pub success_criteria: Vec<String>,
    pub max_cycles: u32,
    pub min_confidence: f64,
    pub budget: Budget,
    /// Longest one verify command may run (the deadline and wall budget bound it further).
    pub verify_timeout: Duration,
    /// Files the coder must not change, besides what the verify commands reference.
    pub protected_paths: Vec<String>,
    /// The task is meant to change protected files.
    pub protected_changes_expected: bool,
}

/// The task's settings: its own where given, else the server's.
pub(crate) fn settings(inner: &EngineState, task: &Task) -> Settings {
    let server = &inner.config.completion;
    let spec = task.options.completion.clone().unwrap_or_default();
    let budget = spec.budget.unwrap_or(server.budget);
    Settings {
        policy: spec.policy.unwrap_or(server.policy),
        verify_commands: spec
            .verify_commands
            .unwrap_or_else(|| server.verify_commands.clone()),
        requires_changes: spec.requires_changes.unwrap_or(false),
        success_criteria: spec.success_criteria,
        max_cycles: spec.max_cycles.unwrap_or(server.max_cycles).max(1),
        min_confidence: server.min_confidence,
        budget: Budget {
            wall: budget.wall_ms.map(Duration::from_millis),
            turns: budget.turns,
            tokens: budget.tokens,
            cost_usd: budget.cost_usd,
        },
        verify_timeout: server.verify_timeout,
        protected_paths: spec
            .protected_paths
            .unwrap_or_else(|| server.protected_paths.clone()),
        protected_changes_expected: spec.protected_changes_expected.unwrap_or(false),
    }
}
