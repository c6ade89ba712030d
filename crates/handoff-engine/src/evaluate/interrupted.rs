//! The evaluator's last word on a run that did not end normally: without it a task the loop
//! guard stopped would have no `completion` at all, and one stopped during a continuation would
//! keep showing the last cycle's progress (`evaluating`) although it is finished.

use handoff_completion::{CompletionOutcome, CompletionStatus};

use super::record_outcome;
use crate::{
    EngineError,
    driver::Driver,
    finish::{Finish, StopReason},
};

/// What was spent judging before the run ended: tokens and cost.
pub(crate) type JudgeSpent = (u64, Option<f64>);

/// Records the outcome of `finish` after `cycles` cycles: `stuck` when the loop guard (or a hook)
/// stopped the run, else `not_done` with the run's own reason. Nothing for a task going back to
/// the queue (its re-run is evaluated afresh) or, when `only_stuck`, for other endings.
pub(crate) async fn record_interrupted(
    d: &Driver<'_>,
    (cycles, judge): (u32, JudgeSpent),
    finish: &Finish,
    only_stuck: bool,
) -> Result<(), EngineError> {
    if finish.requeue {
        return Ok(());
    }
    let (status, reason) = match d.link.stop_reason().await {
        Some(StopReason::Stuck(why)) => (CompletionStatus::Stuck, why),
        // A cap that ran out mid-run is concluded like one found between cycles.
        Some(StopReason::Budget(why)) => (CompletionStatus::BudgetExhausted, why),
        _ if only_stuck => return Ok(()),
        _ => (CompletionStatus::NotDone, finish.reason.clone()),
    };
    let outcome = CompletionOutcome {
        status,
        cycles: cycles.max(1),
        reason,
        confidence: None,
        remaining: Vec::new(),
        checks: Vec::new(),
        judge_tokens: judge.0,
        judge_cost_usd: judge.1,
    };
    record_outcome(d.inner, d.task, &outcome).await
}
