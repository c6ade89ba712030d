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

/// Caps on one task's work; absent fields have no cap, present ones must be positive.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletionBudget {
    /// Wall time in milliseconds.
    #[schemars(range(min = 1))]
    pub wall_ms: Option<u64>,
    /// Executor turns (the first run and each continuation).
    #[schemars(range(min = 1))]
    pub turns: Option<u32>,
    /// Tokens (executor and judge).
    #[schemars(range(min = 1))]
    pub tokens: Option<u64>,
    /// USD (executor and judge), more than 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub cost_usd: Option<f64>,
}

/// A completion setting no task could honour; `field` is its path in a task's arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidCompletion {
    /// The setting (`completion/budget/turns`, `completion/verify_commands`).
    pub field: &'static str,
    /// What is wrong (never the value itself).
    pub message: String,
}

impl InvalidCompletion {
    fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

impl CompletionBudget {
    /// Refuses caps that could never be met: a cap of zero (or a negative or non-finite
    /// cost) would end every task before it starts, so it is a mistake, not a setting.
    pub fn check(&self) -> Result<(), InvalidCompletion> {
        let positive = "must be at least 1 (leave it out for no cap)";
        if self.wall_ms == Some(0) {
            return Err(InvalidCompletion::new(
                "completion/budget/wall_ms",
                positive,
            ));
        }
        if self.turns == Some(0) {
            return Err(InvalidCompletion::new("completion/budget/turns", positive));
        }
        if self.tokens == Some(0) {
            return Err(InvalidCompletion::new("completion/budget/tokens", positive));
        }
        if let Some(cost) = self.cost_usd
            && !(cost.is_finite() && cost > 0.0)
        {
            return Err(InvalidCompletion::new(
                "completion/budget/cost_usd",
                "must be a number greater than 0 (leave it out for no cap)",
            ));
        }
        Ok(())
    }
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

impl CompletionSpec {
    /// Refuses settings that would be silently ignored: non-positive budget caps and verify
    /// commands that are empty or only whitespace (they would run nothing and "pass").
    pub fn check(&self) -> Result<(), InvalidCompletion> {
        if let Some(budget) = &self.budget {
            budget.check()?;
        }
        let commands = self.verify_commands.as_deref().unwrap_or_default();
        if let Some(index) = commands.iter().position(|c| c.trim().is_empty()) {
            return Err(InvalidCompletion::new(
                "completion/verify_commands",
                format!(
                    "entry {index} is empty or only whitespace; each entry is a shell command that must exit 0"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_budget(budget: CompletionBudget) -> CompletionSpec {
        CompletionSpec {
            budget: Some(budget),
            ..CompletionSpec::default()
        }
    }

    #[test]
    fn positive_caps_and_real_commands_pass() {
        let spec = CompletionSpec {
            verify_commands: Some(vec!["cargo test".into(), " make lint ".into()]),
            budget: Some(CompletionBudget {
                wall_ms: Some(1),
                turns: Some(1),
                tokens: Some(1),
                cost_usd: Some(0.01),
            }),
            ..CompletionSpec::default()
        };
        assert_eq!(spec.check(), Ok(()));
        assert_eq!(CompletionSpec::default().check(), Ok(()));
        assert_eq!(with_budget(CompletionBudget::default()).check(), Ok(()));
    }

    #[test]
    fn non_positive_caps_are_refused_by_name() {
        let cases = [
            (
                CompletionBudget {
                    cost_usd: Some(-1.0),
                    ..CompletionBudget::default()
                },
                "completion/budget/cost_usd",
            ),
            (
                CompletionBudget {
                    cost_usd: Some(0.0),
                    ..CompletionBudget::default()
                },
                "completion/budget/cost_usd",
            ),
            (
                CompletionBudget {
                    cost_usd: Some(f64::NAN),
                    ..CompletionBudget::default()
                },
                "completion/budget/cost_usd",
            ),
            (
                CompletionBudget {
                    turns: Some(0),
                    ..CompletionBudget::default()
                },
                "completion/budget/turns",
            ),
            (
                CompletionBudget {
                    wall_ms: Some(0),
                    ..CompletionBudget::default()
                },
                "completion/budget/wall_ms",
            ),
            (
                CompletionBudget {
                    tokens: Some(0),
                    ..CompletionBudget::default()
                },
                "completion/budget/tokens",
            ),
        ];
        for (budget, field) in cases {
            let error = with_budget(budget).check().unwrap_err();
            assert_eq!(error.field, field, "{budget:?}");
        }
    }

    #[test]
    fn empty_verify_commands_are_refused() {
        for commands in [vec![""], vec!["cargo test", "   "], vec!["\t\n"]] {
            let spec = CompletionSpec {
                verify_commands: Some(commands.iter().map(|c| (*c).to_owned()).collect()),
                ..CompletionSpec::default()
            };
            let error = spec.check().unwrap_err();
            assert_eq!(error.field, "completion/verify_commands", "{commands:?}");
        }
        let error = CompletionSpec {
            verify_commands: Some(vec!["true".into(), "".into()]),
            ..CompletionSpec::default()
        }
        .check()
        .unwrap_err();
        assert!(error.message.starts_with("entry 1 "), "{error}");
    }
}
