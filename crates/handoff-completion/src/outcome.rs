//! What the evaluator concluded, as the caller sees it.

use serde::{Deserialize, Serialize};

/// The evaluator's conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionStatus {
    /// Verified done.
    Done,
    /// Not done; items remain.
    NotDone,
    /// The executor is stuck (stalls, loops).
    Stuck,
    /// The cycle limit was reached.
    MaxCycles,
    /// A budget (time, turns, tokens, cost) ran out.
    BudgetExhausted,
    /// The judge could not give a usable verdict.
    Unverified,
    /// The evaluator itself failed.
    Error,
}

impl CompletionStatus {
    /// The status's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CompletionStatus::Done => "done",
            CompletionStatus::NotDone => "not_done",
            CompletionStatus::Stuck => "stuck",
            CompletionStatus::MaxCycles => "max_cycles",
            CompletionStatus::BudgetExhausted => "budget_exhausted",
            CompletionStatus::Unverified => "unverified",
            CompletionStatus::Error => "error",
        }
    }
}

/// One deterministic check and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// What was checked (`cargo test`, `changes`, `todos`, `stuck`).
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What it said (exit code and output tail, the incomplete todos …).
    pub detail: String,
}

/// The evaluator's full answer (docs/completion.md, Steps: Outcome).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionOutcome {
    /// Conclusion.
    pub status: CompletionStatus,
    /// Cycles run (1 = no continuation).
    pub cycles: u32,
    /// Why, in one line.
    pub reason: String,
    /// The judge's confidence, when it ran.
    pub confidence: Option<f64>,
    /// What is still missing.
    pub remaining: Vec<String>,
    /// Deterministic checks of the last cycle.
    pub checks: Vec<CheckResult>,
    /// Judge tokens spent.
    pub judge_tokens: u64,
    /// Judge cost in USD, when prices are known.
    pub judge_cost_usd: Option<f64>,
}
