//! Every rule of the evaluation's step function, without a process: each former exit of the
//! evaluation loop, fed the observation that leads to it.

use std::time::Duration;

use handoff_completion::{
    CompletionOutcome, CompletionStatus, budget::Budget, outcome::CheckResult,
};
use handoff_task::{CompletionPolicy, EventKind};

use super::*;

fn plan(policy: CompletionPolicy, max_cycles: u32, budget: Budget) -> CompletionPlan {
    CompletionPlan {
        policy,
        verify_commands: Vec::new(),
        requires_changes: false,
        answer_only: false,
        success_criteria: Vec::new(),
        max_cycles,
        min_confidence: 0.7,
        budget,
        verify_timeout: Duration::from_secs(600),
        verify_before: Duration::ZERO,
        protected_paths: Vec::new(),
        protected_changes_expected: false,
    }
}

/// A `checks` evaluation allowed `max_cycles`, past its first turn's normal end.
fn evaluating(max_cycles: u32) -> Evaluation {
    let mut e = Evaluation::new(
        &plan(CompletionPolicy::Checks, max_cycles, Budget::default()),
        false,
    );
    assert!(matches!(
        e.next(ended(true)),
        Decision::Look { begin: true }
    ));
    e
}

fn ended(completed: bool) -> Observed {
    Observed::TurnEnded {
        completed,
        lost: false,
    }
}

/// An assessment that found `remaining` open, with the diff hashed as `diff`.
fn not_done(remaining: &[&str], diff: u64) -> Assessment {
    Assessment {
        remaining: remaining.iter().map(|r| (*r).to_owned()).collect(),
        checks: vec![CheckResult {
            name: "make test".to_owned(),
            passed: false,
            detail: "exit 1".to_owned(),
        }],
        reason: remaining.join("; "),
        progress: true,
        diff_hash: diff,
        continuation: "Fix the failing test.".to_owned(),
        ..Assessment::default()
    }
}

fn assessed(seen: Assessment) -> Observed {
    Observed::Assessed(Box::new(seen), Duration::from_secs(1))
}

/// Assesses the next cycle with `seen` (asserting the evaluation asked for an assessment).
fn cycle(e: &mut Evaluation, seen: Assessment) -> Decision {
    assert!(matches!(e.next(Observed::Quiet), Decision::Assess { .. }));
    e.next(assessed(seen))
}

fn concluded(decision: Decision) -> CompletionOutcome {
    match decision {
        Decision::End(Ending::Conclude(outcome)) => outcome,
        other => panic!("expected an outcome, got {other:?}"),
    }
}

#[test]
fn policy_none_keeps_the_runs_own_ending() {
    for completed in [true, false] {
        let mut e = Evaluation::new(&plan(CompletionPolicy::None, 5, Budget::default()), false);
        assert!(matches!(
            e.next(ended(completed)),
            Decision::End(Ending::Keep)
        ));
    }
}

#[test]
fn a_first_turn_that_did_not_end_normally_is_not_evaluated() {
    let checks = plan(CompletionPolicy::Checks, 5, Budget::default());
    let mut e = Evaluation::new(&checks, false);
    // Concluded stuck when the loop guard stopped it, else left as it ended.
    assert!(matches!(
        e.next(ended(false)),
        Decision::End(Ending::Interrupted { only_stuck: true })
    ));
    // A run this instance lost is the new owner's to conclude.
    let mut e = Evaluation::new(&checks, false);
    let lost = Observed::TurnEnded {
        completed: false,
        lost: true,
    };
    assert!(matches!(e.next(lost), Decision::End(Ending::Keep)));
}

#[test]
fn a_stop_between_cycles_ends_the_evaluation_with_what_was_spent() {
    let mut e = evaluating(5);
    let judged = Assessment {
        judge_tokens: 40,
        judge_cost: Some(0.25),
        ..not_done(&["tests fail"], 1)
    };
    assert!(matches!(cycle(&mut e, judged), Decision::Continue { .. }));
    assert!(matches!(
        e.next(ended(true)),
        Decision::Look { begin: false }
    ));
    let stop = StopReason::Cancelled("enough".to_owned());
    assert!(matches!(
        e.next(Observed::Stopped(stop.clone())),
        Decision::End(Ending::Stop(s)) if s == stop
    ));
    assert_eq!(e.spent(), (2, (40, Some(0.25))));
}

#[test]
fn policy_judge_without_a_judge_is_unverified() {
    let judge = plan(CompletionPolicy::Judge, 5, Budget::default());
    let mut e = Evaluation::new(&judge, false);
    e.next(ended(true));
    let outcome = concluded(e.next(Observed::Quiet));
    assert_eq!(outcome.status, CompletionStatus::Unverified);
    assert!(
        outcome.reason.contains("evaluator.provider"),
        "{}",
        outcome.reason
    );
    assert_eq!(outcome.cycles, 1);
    // With one configured, the judge is asked; policy `checks` never asks it.
    let mut e = Evaluation::new(&judge, true);
    e.next(ended(true));
    assert!(matches!(
        e.next(Observed::Quiet),
        Decision::Assess {
            cycle: 1,
            replan: false,
            judge: true
        }
    ));
    let mut e = evaluating(5);
    assert!(matches!(
        e.next(Observed::Quiet),
        Decision::Assess { judge: false, .. }
    ));
}

#[test]
fn a_done_or_unverifiable_assessment_is_the_outcome() {
    let mut e = evaluating(5);
    let done = Assessment {
        done: true,
        reason: "every check passed".to_owned(),
        confidence: Some(0.9),
        judge_tokens: 7,
        ..Assessment::default()
    };
    let outcome = concluded(cycle(&mut e, done));
    assert_eq!(outcome.status, CompletionStatus::Done);
    assert_eq!(
        (outcome.reason.as_str(), outcome.confidence),
        ("every check passed", Some(0.9))
    );
    assert_eq!((outcome.cycles, outcome.judge_tokens), (1, 7));

    let mut e = evaluating(5);
    let unverified = Assessment {
        unverified: Some("no usable verdict".to_owned()),
        ..not_done(&["tests fail"], 1)
    };
    let outcome = concluded(cycle(&mut e, unverified));
    assert_eq!(outcome.status, CompletionStatus::Unverified);
    assert_eq!(outcome.reason, "no usable verdict");
    assert_eq!(outcome.remaining, vec!["tests fail".to_owned()]);
}

#[test]
fn a_budget_cap_reached_between_cycles_ends_the_task() {
    let capped = Budget {
        tokens: Some(100),
        ..Budget::default()
    };
    let mut e = Evaluation::new(&plan(CompletionPolicy::Checks, 5, capped), false);
    e.next(ended(true));
    // The executor's tokens and the judge's count together.
    let seen = Assessment {
        executor_tokens: 70,
        judge_tokens: 30,
        ..not_done(&["tests fail"], 1)
    };
    let outcome = concluded(cycle(&mut e, seen));
    assert_eq!(outcome.status, CompletionStatus::BudgetExhausted);
    assert!(outcome.reason.contains("100 tokens"), "{}", outcome.reason);
    assert_eq!(outcome.remaining, vec!["tests fail".to_owned()]);
    assert_eq!(outcome.checks.len(), 1);
}

#[test]
fn a_continuation_is_recorded_as_the_evaluators_verdict() {
    let mut e = evaluating(5);
    let Decision::Continue { prompt, verdict } = cycle(&mut e, not_done(&["b.txt missing"], 1))
    else {
        panic!("expected a continuation");
    };
    assert!(prompt.contains("b.txt missing") && prompt.contains("Fix the failing test."));
    assert!(!prompt.contains("new plan"));
    assert_eq!(verdict.kind, EventKind::Verdict);
    assert_eq!(
        verdict.message,
        "Evaluator: 1 item(s) remaining — continuing (cycle 2/5)"
    );
    assert_eq!(verdict.data["cycle"], 1);
    assert_eq!(verdict.data["next"], "continue");
    assert_eq!(verdict.data["continuation_prompt"], prompt.as_str());
    // The continued run is the second turn; the next assessment is cycle 2.
    assert!(matches!(
        e.next(ended(true)),
        Decision::Look { begin: false }
    ));
    assert!(matches!(
        e.next(Observed::Quiet),
        Decision::Assess { cycle: 2, .. }
    ));
}

#[test]
fn a_continued_run_that_did_not_end_normally_ends_the_evaluation() {
    let mut e = evaluating(5);
    cycle(&mut e, not_done(&["tests fail"], 1));
    assert!(matches!(
        e.next(ended(false)),
        Decision::End(Ending::Interrupted { only_stuck: false })
    ));
    assert_eq!(e.spent().0, 2);
}

#[test]
fn a_session_that_cannot_be_resumed_is_an_error_with_what_remains() {
    let mut e = evaluating(5);
    cycle(&mut e, not_done(&["tests fail"], 1));
    let outcome = concluded(e.next(Observed::NotResumed("session gone".to_owned())));
    assert_eq!(outcome.status, CompletionStatus::Error);
    assert_eq!(
        outcome.reason,
        "could not continue the executor: session gone"
    );
    assert_eq!(outcome.remaining, vec!["tests fail".to_owned()]);
    assert_eq!(outcome.cycles, 1, "the turn never started");
}

#[test]
fn the_cycle_limit_ends_the_task() {
    let mut e = evaluating(2);
    assert!(matches!(
        cycle(&mut e, not_done(&["a"], 1)),
        Decision::Continue { .. }
    ));
    e.next(ended(true));
    let outcome = concluded(cycle(&mut e, not_done(&["a"], 2)));
    assert_eq!(outcome.status, CompletionStatus::MaxCycles);
    assert_eq!((outcome.reason.as_str(), outcome.cycles), ("a", 2));
}

#[test]
fn stalls_replan_once_then_end_the_task_stuck() {
    let mut e = evaluating(20);
    let stalled = |diff| Assessment {
        progress: false,
        ..not_done(&["a"], diff)
    };
    assert!(matches!(
        cycle(&mut e, stalled(1)),
        Decision::Continue { .. }
    ));
    e.next(ended(true));
    let Decision::Continue { prompt, verdict } = cycle(&mut e, stalled(2)) else {
        panic!("expected a re-plan");
    };
    assert!(prompt.contains("make a new plan"), "{prompt}");
    assert_eq!(verdict.data["next"], "replan");
    e.next(ended(true));
    assert!(matches!(
        e.next(Observed::Quiet),
        Decision::Assess { replan: true, .. }
    ));
    for diff in 3..5 {
        assert!(matches!(
            e.next(assessed(stalled(diff))),
            Decision::Continue { .. }
        ));
        e.next(ended(true));
        assert!(matches!(
            e.next(Observed::Quiet),
            Decision::Assess { replan: false, .. }
        ));
    }
    let Decision::End(Ending::Conclude(outcome)) = e.next(assessed(stalled(5))) else {
        panic!("expected the task to end stuck");
    };
    assert_eq!(outcome.status, CompletionStatus::Stuck);
    assert_eq!(outcome.cycles, 5);
}

#[test]
fn the_owners_messages_are_delivered_and_the_result_evaluated_afresh() {
    let mut e = evaluating(5);
    let judged = Assessment {
        judge_tokens: 40,
        ..not_done(&["a"], 1)
    };
    cycle(&mut e, judged);
    e.next(ended(true));
    // Between cycles, and as late as the outcome: either way the session resumes with them.
    assert!(matches!(
        e.next(Observed::Messages(vec!["also b".to_owned()])),
        Decision::Deliver(m) if m == ["also b"]
    ));
    assert_eq!(e.spent(), (1, (0, None)), "evaluated afresh");
    assert!(matches!(
        e.next(ended(true)),
        Decision::Look { begin: true }
    ));
    assert!(matches!(
        e.next(Observed::Quiet),
        Decision::Assess { cycle: 1, .. }
    ));
    // A delivered run that did not end normally ends the evaluation, with a last word.
    e.next(Observed::Messages(vec!["and c".to_owned()]));
    assert!(matches!(
        e.next(ended(false)),
        Decision::End(Ending::Interrupted { only_stuck: false })
    ));
    // No messages is nothing new.
    let mut e = evaluating(5);
    assert!(matches!(
        e.next(Observed::Messages(Vec::new())),
        Decision::Assess { .. }
    ));
}
