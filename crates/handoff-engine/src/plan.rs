//! What one run of a task is held to, decided once when the run starts (at its claim, or its
//! re-attach after a restart) from the task and the configuration: the effective completion
//! settings, the deadline, the executor and how its verify commands are confined, and the
//! permission rules handed to the executor. The run's driver, its supervisor and the evaluator
//! all read this one plan; nobody recomputes a part of it.

use std::{sync::Arc, time::Duration};

use handoff_completion::budget::Budget;
use handoff_config::CompletionConfig;
use handoff_policy::PermissionRule;
use handoff_runner::{CheckRunner, Executor};
use handoff_task::{CompletionPolicy, Task, unix_millis_now};
use tokio::time::Instant;

use crate::shared::Shared;

/// One run's plan.
pub(crate) struct RunPlan {
    /// The task's completion settings: its own where given, else the server's.
    pub completion: CompletionPlan,
    /// When the run is stopped for its deadline.
    pub deadline: Deadline,
    /// The executor the task runs on (none: it is not available on this server).
    pub executor: Option<Arc<dyn Executor>>,
    /// How the verify commands run: confined like the executor's processes.
    pub checks: CheckRunner,
    /// The rules an executor may apply itself for the task.
    pub preset_rules: Vec<PermissionRule>,
}

impl RunPlan {
    /// The plan of a run of `task` starting now.
    pub(crate) fn new(shared: &Shared, task: &Task) -> Self {
        let grace = crate::finish::timeout_grace(task, shared.config.tasks.cancel_grace);
        Self {
            completion: CompletionPlan::new(&shared.config.completion, task),
            deadline: Deadline::new(task, grace),
            executor: shared.executors.get(&task.executor),
            checks: shared.executors.checks(&task.executor),
            preset_rules: shared.policy.preset_for(task),
        }
    }

    /// Whether the task's executor session must outlive its first run (it may be continued).
    pub(crate) fn continuable(&self) -> bool {
        self.completion.policy != CompletionPolicy::None
    }
}

/// The task's deadline as a point on this process's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// When the run is asked to stop: the grace before the deadline, so the kill lands on it.
    pub stop_at: Instant,
    /// The polite part of a timeout's stop ([`crate::finish::timeout_grace`]).
    pub grace: Duration,
}

impl Deadline {
    /// A re-attached run keeps its original deadline: it counts from the task's start.
    fn new(task: &Task, grace: Duration) -> Self {
        let timeout = Duration::from_millis(task.options.timeout_ms);
        let elapsed = task
            .started_at
            .map_or(0, |start| unix_millis_now().saturating_sub(start));
        let remaining =
            timeout.saturating_sub(Duration::from_millis(u64::try_from(elapsed).unwrap_or(0)));
        Self {
            stop_at: Instant::now() + remaining.saturating_sub(grace),
            grace,
        }
    }

    /// When the run is killed for its deadline.
    pub(crate) fn kill_at(&self) -> Instant {
        self.stop_at + self.grace
    }
}

/// A task's effective verification settings.
#[derive(Debug, Clone)]
pub(crate) struct CompletionPlan {
    pub policy: CompletionPolicy,
    pub verify_commands: Vec<String>,
    pub requires_changes: bool,
    /// The task said `requires_changes: false`: an answer alone may be its result.
    pub answer_only: bool,
    pub success_criteria: Vec<String>,
    pub max_cycles: u32,
    pub min_confidence: f64,
    pub budget: Budget,
    /// Longest one verify command may run (the deadline and wall budget bound it further).
    pub verify_timeout: Duration,
    /// Longest one verify command runs before the run (zero: not run before).
    pub verify_before: Duration,
    /// Files the coder must not change, besides what the verify commands reference.
    pub protected_paths: Vec<String>,
    /// The task is meant to change protected files.
    pub protected_changes_expected: bool,
}

impl CompletionPlan {
    /// The task's settings (`execute_task {completion}`) where given, else the server's.
    pub(crate) fn new(server: &CompletionConfig, task: &Task) -> Self {
        let spec = task.options.completion.clone().unwrap_or_default();
        let budget = spec.budget.unwrap_or(server.budget);
        Self {
            policy: spec.policy.unwrap_or(server.policy),
            verify_commands: spec
                .verify_commands
                .unwrap_or_else(|| server.verify_commands.clone()),
            requires_changes: spec.requires_changes.unwrap_or(false),
            answer_only: spec.requires_changes == Some(false),
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
            verify_before: server.verify_before,
            protected_paths: spec
                .protected_paths
                .unwrap_or_else(|| server.protected_paths.clone()),
            protected_changes_expected: spec.protected_changes_expected.unwrap_or(false),
        }
    }
}
