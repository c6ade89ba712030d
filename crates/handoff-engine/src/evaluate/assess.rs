//! One assessment of where a task (or a manager's sub-task) stands: deterministic checks, then
//! the judge when the policy has one.

use handoff_completion::{
    CompletionStatus, checks,
    judge::{self, JudgeInput, Judgement},
    outcome::CheckResult,
};
use handoff_llm::LlmClient;

use super::{evidence, record_judge};
use crate::{EngineError, driver::Driver, plan::CompletionPlan};

/// What is being assessed: the whole task, or one sub-task of a plan.
pub(crate) struct Goal<'a> {
    pub text: &'a str,
    pub criteria: &'a [String],
    pub cycle: (u32, u32),
    pub replan: bool,
    /// Verify commands apply (the whole task; a sub-task is judged on its criteria).
    pub run_checks: bool,
}

/// The assessment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Assessment {
    pub done: bool,
    pub remaining: Vec<String>,
    pub checks: Vec<CheckResult>,
    pub confidence: Option<f64>,
    pub continuation: String,
    pub summary: String,
    pub reason: String,
    pub stuck: bool,
    pub progress: bool,
    pub diff_stat: String,
    pub diff_hash: u64,
    pub todo_counts: (usize, usize),
    pub executor_tokens: u64,
    pub executor_cost: f64,
    pub judge_tokens: u64,
    pub judge_cost: Option<f64>,
    /// The judge could not give a verdict (`unverified`), with why.
    pub unverified: Option<String>,
}

/// Assesses `goal` now; `judge` is used unless the policy is `checks`.
pub(crate) async fn assess(
    d: &Driver<'_>,
    settings: &CompletionPlan,
    judge: Option<&LlmClient>,
    goal: &Goal<'_>,
) -> Result<Assessment, EngineError> {
    let mut wanted = settings.clone();
    if !goal.run_checks {
        wanted.verify_commands.clear();
        wanted.requires_changes = false;
    }
    let evidence = evidence::gather(d, &wanted, judge.is_some()).await?;
    let (check_results, mut remaining) = checks::run(&evidence.checks);
    // A failing check is the headline, whatever the judge reasons.
    let failed_checks = remaining.join("; ");
    let mut assessment = Assessment {
        done: false,
        remaining: Vec::new(),
        checks: check_results.clone(),
        confidence: None,
        continuation: String::new(),
        summary: evidence.final_message.clone(),
        reason: String::new(),
        stuck: evidence.checks.stuck.is_some(),
        progress: true,
        diff_stat: evidence.diff_stat(),
        diff_hash: evidence.diff_hash(),
        todo_counts: evidence.todo_counts,
        executor_tokens: evidence.executor_tokens,
        executor_cost: evidence.executor_cost,
        judge_tokens: 0,
        judge_cost: None,
        unverified: None,
    };
    if let Some(client) = judge {
        let input = JudgeInput {
            task: goal.text.to_owned(),
            success_criteria: goal.criteria.to_vec(),
            final_message: evidence.final_message.clone(),
            diff_stat: assessment.diff_stat.clone(),
            patch: evidence.patch(),
            todos: evidence.todos.clone(),
            checks: check_results,
            flags: checks::judge_flags(&evidence.checks),
            usage: format!(
                "{} executor tokens, ${:.4}",
                evidence.executor_tokens, evidence.executor_cost
            ),
            cycle: goal.cycle,
            replan: goal.replan,
        };
        let (judgement, usage, cost) = judge::judge(client, &input, settings.min_confidence).await;
        assessment.judge_tokens = usage.total();
        assessment.judge_cost = cost;
        record_judge(d.inner, d.task, goal.cycle.0, &judgement).await?;
        assessment.judged(judgement, &mut remaining);
    }
    if !failed_checks.is_empty() {
        assessment.reason = failed_checks;
    } else if assessment.reason.is_empty() {
        assessment.reason = if remaining.is_empty() {
            "every check passed".to_owned()
        } else {
            remaining.join("; ")
        };
    }
    assessment.done = remaining.is_empty() && assessment.unverified.is_none();
    assessment.remaining = remaining;
    Ok(assessment)
}

impl Assessment {
    /// Takes in the judge's answer: its verdict's findings (what it still misses joins
    /// `remaining`), or why it gave none.
    fn judged(&mut self, judgement: Judgement, remaining: &mut Vec<String>) {
        let verdict = match judgement {
            Judgement::Verdict { verdict, .. } => verdict,
            Judgement::Unverified(reason) => {
                self.unverified = Some(reason);
                return;
            }
        };
        self.confidence = Some(verdict.confidence);
        self.stuck |= verdict.is_stuck;
        self.progress = verdict.is_progress_being_made;
        self.continuation = verdict.continuation_prompt.clone();
        self.summary = verdict.summary.clone();
        self.reason = verdict.reason.clone();
        if !verdict.done {
            for item in verdict.remaining {
                if !remaining.contains(&item) {
                    remaining.push(item);
                }
            }
            if remaining.is_empty() {
                remaining.push(verdict.reason);
            }
        }
    }

    /// The status this assessment alone implies.
    pub fn status(&self) -> CompletionStatus {
        if self.unverified.is_some() {
            CompletionStatus::Unverified
        } else if self.done {
            CompletionStatus::Done
        } else {
            CompletionStatus::NotDone
        }
    }
}
