//! The evaluator's rules as a pure step function: given what its driver observed since the last
//! decision (a run ended, a stop was decided, the owner wrote, an assessment came back), what
//! happens next. The rules are those of docs/completion.md ("Steps"); each is named where it is
//! applied. No process, store or clock is touched here: the driver ([`super::verify`]) runs the
//! turns, the verify commands and the judge, and feeds their results back.

use std::time::Duration;

use handoff_completion::{
    CompletionOutcome, CompletionStatus,
    budget::{Budget, Spent},
    cycle::{CycleObservation, CycleState, NextStep},
    outcome::CheckResult,
};
use handoff_task::{CompletionPolicy, EventKind, NewEvent};
use serde_json::json;

use super::{assess::Assessment, continuation_prompt};
use crate::{finish::StopReason, plan::CompletionPlan};

/// What the driver observed since the last decision.
#[derive(Debug)]
pub(crate) enum Observed {
    /// The run the evaluation waited on ended: normally (`completed`) or not; `lost` when this
    /// instance lost the task meanwhile.
    TurnEnded { completed: bool, lost: bool },
    /// Handoff decided to stop the task (cancel, deadline, shutdown…).
    Stopped(StopReason),
    /// The task's owner sent messages after the turn ended.
    Messages(Vec<String>),
    /// Between cycles, nothing new: no stop, no message.
    Quiet,
    /// The turn's assessment (checks, the judge), `wall` after the task started.
    Assessed(Box<Assessment>, Duration),
    /// The executor's session could not be resumed with the continuation: why.
    NotResumed(String),
}

/// What the driver does next.
#[derive(Debug)]
pub(crate) enum Decision {
    /// See whether a stop was decided or messages arrived; with `begin`, the evaluation of a
    /// run's end begins (messages from now on are kept for it).
    Look { begin: bool },
    /// Assess the turn as cycle `cycle` (checks, then the judge when `judge`).
    Assess {
        cycle: u32,
        replan: bool,
        judge: bool,
    },
    /// Resume the session with the owner's messages; the result is evaluated afresh.
    Deliver(Vec<String>),
    /// Record `verdict`, then resume the same session with the targeted `prompt`.
    Continue { prompt: String, verdict: NewEvent },
    /// The evaluation is over.
    End(Ending),
}

/// How the evaluation ends.
#[derive(Debug)]
pub(crate) enum Ending {
    /// With the run's own ending; nothing more is recorded.
    Keep,
    /// With the run's own ending, recording the evaluator's last word on it (with
    /// `only_stuck`, only when the loop guard, a hook or the budget stopped it).
    Interrupted { only_stuck: bool },
    /// Stopped for this reason, recording the evaluator's last word.
    Stop(StopReason),
    /// With this outcome, recorded (unless the owner wrote meanwhile: then the session is
    /// resumed with that instead).
    Conclude(CompletionOutcome),
}

/// Which run's end the evaluation waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Awaiting {
    /// The task's first run.
    First,
    /// A continuation the evaluator asked for.
    Continuation,
    /// A run resumed with the owner's messages.
    Delivery,
}

/// The latest assessment's findings, kept for an outcome decided after it.
#[derive(Debug, Clone, Default)]
struct Findings {
    remaining: Vec<String>,
    checks: Vec<CheckResult>,
    confidence: Option<f64>,
}

/// What the rules read of the task's plan and the server.
#[derive(Debug, Clone, Copy)]
struct Rules {
    policy: CompletionPolicy,
    max_cycles: u32,
    budget: Budget,
    /// An external judge is configured (evaluator.provider and evaluator.model).
    judge_configured: bool,
}

/// One task's evaluation: its rules and running totals.
#[derive(Debug, Clone)]
pub(crate) struct Evaluation {
    rules: Rules,
    awaiting: Awaiting,
    cycles: CycleState,
    /// The cycle being assessed (1-based).
    cycle: u32,
    /// Executor runs assessed (the first included).
    turns: u32,
    judge_tokens: u64,
    judge_cost: Option<f64>,
    replan_next: bool,
    findings: Findings,
}

impl Evaluation {
    /// The evaluation of a task's run under `plan`.
    pub(crate) fn new(plan: &CompletionPlan, judge_configured: bool) -> Self {
        let rules = Rules {
            policy: plan.policy,
            max_cycles: plan.max_cycles,
            budget: plan.budget,
            judge_configured,
        };
        Self::start(rules, Awaiting::First)
    }

    /// An evaluation waiting on the end of the run `awaiting`, nothing spent yet.
    fn start(rules: Rules, awaiting: Awaiting) -> Self {
        Self {
            rules,
            awaiting,
            cycles: CycleState::new(rules.max_cycles),
            cycle: 0,
            turns: 1,
            judge_tokens: 0,
            judge_cost: None,
            replan_next: false,
            findings: Findings::default(),
        }
    }

    /// What was spent so far: executor turns, then judge tokens and cost.
    pub(crate) fn spent(&self) -> (u32, (u64, Option<f64>)) {
        (self.turns, (self.judge_tokens, self.judge_cost))
    }

    /// The step: what `observed` leads to.
    pub(crate) fn next(&mut self, observed: Observed) -> Decision {
        match observed {
            Observed::TurnEnded { completed, lost } => self.turn_ended(completed, lost),
            Observed::Stopped(stop) => Decision::End(Ending::Stop(stop)),
            Observed::Messages(messages) if messages.is_empty() => self.quiet(),
            Observed::Messages(messages) => {
                // New input after the turn ended: the task is not done, and the run resumed
                // with it is evaluated afresh.
                *self = Self::start(self.rules, Awaiting::Delivery);
                Decision::Deliver(messages)
            }
            Observed::Quiet => self.quiet(),
            Observed::Assessed(seen, wall) => self.assessed(*seen, wall),
            Observed::NotResumed(why) => self.conclude(
                CompletionStatus::Error,
                format!("could not continue the executor: {why}"),
            ),
        }
    }

    fn turn_ended(&mut self, completed: bool, lost: bool) -> Decision {
        match self.awaiting {
            // Policy `none`: the executor stopping is enough.
            Awaiting::First if self.rules.policy == CompletionPolicy::None => {
                Decision::End(Ending::Keep)
            }
            // When: only a turn that ended normally is evaluated. A run this instance lost is
            // the new owner's to conclude.
            Awaiting::First if !completed && lost => Decision::End(Ending::Keep),
            // A coder the loop guard stopped on its first turn is concluded stuck.
            Awaiting::First if !completed => {
                Decision::End(Ending::Interrupted { only_stuck: true })
            }
            Awaiting::Continuation => {
                self.turns += 1;
                if completed {
                    Decision::Look { begin: false }
                } else {
                    Decision::End(Ending::Interrupted { only_stuck: false })
                }
            }
            // Every evaluated task ends with a final `completion`, never left at `evaluating`.
            Awaiting::Delivery if !completed => {
                Decision::End(Ending::Interrupted { only_stuck: false })
            }
            Awaiting::First | Awaiting::Delivery => Decision::Look { begin: true },
        }
    }

    /// Nothing new between cycles: the turn is assessed, if it can be.
    fn quiet(&mut self) -> Decision {
        let judge = self.rules.policy != CompletionPolicy::Checks;
        if judge && !self.rules.judge_configured {
            let why = "policy `judge` needs evaluator.provider and evaluator.model";
            return self.conclude(CompletionStatus::Unverified, why.to_owned());
        }
        self.cycle = self.cycles.cycle() + 1;
        Decision::Assess {
            cycle: self.cycle,
            replan: self.replan_next,
            judge,
        }
    }

    fn assessed(&mut self, seen: Assessment, wall: Duration) -> Decision {
        self.judge_tokens += seen.judge_tokens;
        if let Some(cost) = seen.judge_cost {
            *self.judge_cost.get_or_insert(0.0) += cost;
        }
        self.findings = Findings {
            remaining: seen.remaining.clone(),
            checks: seen.checks.clone(),
            confidence: seen.confidence,
        };
        // Deterministic checks and the judge agree it is done, or the judge gave no verdict.
        if seen.done || seen.unverified.is_some() {
            let reason = seen.unverified.clone().unwrap_or(seen.reason.clone());
            return self.conclude(seen.status(), reason);
        }
        // Budgets: a cap reached between cycles ends the task.
        let spent = Spent {
            wall,
            turns: self.turns,
            tokens: seen.executor_tokens + self.judge_tokens,
            cost_usd: seen.executor_cost + self.judge_cost.unwrap_or(0.0),
        };
        if let Some(why) = self.rules.budget.exhausted(&spent) {
            return self.conclude(CompletionStatus::BudgetExhausted, why);
        }
        // Cycles: the stall counter decides between continuing, one re-plan and giving up.
        let next = self.cycles.after(&CycleObservation {
            progress: seen.progress,
            stuck: seen.stuck,
            diff_hash: seen.diff_hash,
            todos: seen.todo_counts,
        });
        match next {
            NextStep::StopStuck => self.conclude(CompletionStatus::Stuck, seen.reason),
            NextStep::StopMaxCycles => self.conclude(CompletionStatus::MaxCycles, seen.reason),
            NextStep::Continue | NextStep::Replan => self.continuation(&seen, next),
        }
    }

    /// Cycles: the same session resumed with a targeted prompt, recorded as an evaluator
    /// event (never a caller message).
    fn continuation(&mut self, seen: &Assessment, next: NextStep) -> Decision {
        self.replan_next = next == NextStep::Replan;
        self.awaiting = Awaiting::Continuation;
        let remaining = &seen.remaining;
        let prompt = continuation_prompt(remaining, &seen.continuation, self.replan_next);
        let message = format!(
            "Evaluator: {} item(s) remaining — continuing (cycle {}/{})",
            remaining.len(),
            self.cycle + 1,
            self.rules.max_cycles
        );
        let verdict = NewEvent::new(EventKind::Verdict, message).with_data(json!({
            "by": "evaluator",
            "done": false,
            "cycle": self.cycle,
            "remaining": remaining,
            "checks": seen.checks,
            "next": next,
            "continuation_prompt": prompt,
            // Running totals, so the budget meter of the next run counts the judges.
            "judge_tokens": self.judge_tokens,
            "judge_cost_usd": self.judge_cost,
        }));
        Decision::Continue { prompt, verdict }
    }

    /// Outcome: the evaluator's full answer, with the latest assessment's findings.
    fn conclude(&self, status: CompletionStatus, reason: String) -> Decision {
        let findings = self.findings.clone();
        Decision::End(Ending::Conclude(CompletionOutcome {
            status,
            // One cycle per executor run assessed: a stop after the cycle limit is not one more.
            cycles: self.turns,
            reason,
            confidence: findings.confidence,
            remaining: findings.remaining,
            checks: findings.checks,
            judge_tokens: self.judge_tokens,
            judge_cost_usd: self.judge_cost,
        }))
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
