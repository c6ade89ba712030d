//! Verification integrity: the verify commands run no longer than the setting, the task's
//! remaining deadline and its wall budget allow (and die with their process group when the
//! assessment is dropped), and the files they rely on are compared with the pre-run snapshot.
//! Before the run they run once on the directory as it was ([`run_before`]), so "fewer tests ran
//! than before" is measured, not guessed; the counts are kept beside the snapshot.

use std::{path::Path, time::Duration};

use handoff_completion::protected;
use handoff_task::{Task, unix_millis_now};

use crate::{EngineError, driver::Driver, plan::CompletionPlan, state::EngineState};

/// The name the counts from before the run are kept under, beside the snapshot.
const BEFORE_KEPT: &str = "tests-before";

/// What bounds a verify command's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Setting,
    Deadline,
    Budget,
}

/// How long a verify command may run when started at `now` (unix ms) in a run started at
/// `started` with a deadline of `timeout_ms`, and what bounds it.
fn check_limit(
    (timeout_ms, started): (u64, Option<i64>),
    settings: &CompletionPlan,
    now: i64,
) -> (Duration, Bound) {
    let elapsed = Duration::from_millis(u64::try_from(now - started.unwrap_or(now)).unwrap_or(0));
    let mut limit = (settings.verify_timeout, Bound::Setting);
    let deadline = Duration::from_millis(timeout_ms).saturating_sub(elapsed);
    if deadline < limit.0 {
        limit = (deadline, Bound::Deadline);
    }
    if let Some(wall) = settings.budget.wall
        && wall.saturating_sub(elapsed) < limit.0
    {
        limit = (wall.saturating_sub(elapsed), Bound::Budget);
    }
    limit
}

fn bound_text(bound: Bound, task: &Task) -> String {
    match bound {
        Bound::Setting => "completion.verify_timeout_secs".to_owned(),
        Bound::Deadline => format!("the task's deadline ({} ms)", task.options.timeout_ms),
        Bound::Budget => "the task's wall-time budget".to_owned(),
    }
}

/// Runs the verify commands, each bounded; a command past the bound is killed, and one with no
/// time left is not started.
pub(super) async fn run_commands(
    d: &Driver<'_>,
    settings: &CompletionPlan,
) -> Vec<(String, Option<i32>, String)> {
    let task = d.task;
    let workdir = Path::new(&task.workdir);
    let checks = &d.plan.checks;
    let mut commands = Vec::new();
    for command in &settings.verify_commands {
        let run = (task.options.timeout_ms, task.started_at);
        let (limit, bound) = check_limit(run, settings, unix_millis_now());
        if limit.is_zero() {
            let why = format!("not run: no time left before {}", bound_text(bound, task));
            commands.push((command.clone(), None, why));
            continue;
        }
        match checks.run(task.id.as_str(), workdir, command, limit).await {
            Ok(run) if run.code.is_none() && bound != Bound::Setting => {
                let why = format!("{}; killed at {}", run.output, bound_text(bound, task));
                commands.push((command.clone(), None, why));
            }
            Ok(run) => commands.push((command.clone(), run.code, run.output)),
            Err(e) => commands.push((command.clone(), None, format!("could not run: {e}"))),
        }
    }
    commands
}

/// Runs the verify commands on the task directory before the executor starts (and before the
/// snapshot, so what they write is part of the baseline), each noted in the task's history;
/// returns how many tests each ran, where its runner said.
pub(crate) async fn run_before(d: &Driver<'_>) -> Result<Vec<(String, u64)>, EngineError> {
    let (task, settings) = (d.task, &d.plan.completion);
    if settings.policy == handoff_task::CompletionPolicy::None || settings.verify_before.is_zero() {
        return Ok(Vec::new());
    }
    // A quarter of the deadline at most: the run is what the task is for.
    let quarter = Duration::from_millis(task.options.timeout_ms / 4);
    let limit = settings
        .verify_before
        .min(settings.verify_timeout)
        .min(quarter);
    let mut counts = Vec::new();
    for command in &settings.verify_commands {
        let started = std::time::Instant::now();
        let checks = &d.plan.checks;
        let run = tokio::select! {
            run = checks.run(task.id.as_str(), Path::new(&task.workdir), command, limit) => run,
            // A cancel (or the deadline) wins: dropping the run kills its process group.
            () = d.link.stopped() => return Ok(counts),
        };
        let took = started.elapsed().as_secs_f64();
        let note = match run {
            Ok(run) => {
                let ran = handoff_completion::tests_run::tests_ran(&run.output);
                if let Some(ran) = ran {
                    counts.push((command.clone(), ran));
                }
                let ended = run.code.map_or_else(
                    || format!("was stopped after {took:.1} s"),
                    |code| format!("exited {code} in {took:.1} s"),
                );
                let tests = ran.map_or_else(String::new, |n| format!(", running {n} test(s)"));
                format!("before the run, `{command}` {ended}{tests}")
            }
            Err(e) => format!("before the run, `{command}` could not run: {e}"),
        };
        d.note(note).await?;
    }
    Ok(counts)
}

/// Keeps the counts [`run_before`] found beside the task's snapshot.
pub(crate) async fn keep_before(inner: &EngineState, task: &Task, counts: &[(String, u64)]) {
    let Ok(bytes) = serde_json::to_vec(counts) else {
        return;
    };
    if let Err(e) = inner.snapshots.keep(&task.id, BEFORE_KEPT, &bytes).await {
        tracing::warn!(task = %task.id, error = %e, "could not keep the test counts");
    }
}

/// The counts [`keep_before`] kept (none when the commands did not run before the run).
pub(super) async fn tests_before(inner: &EngineState, task: &Task) -> Vec<(String, u64)> {
    inner
        .snapshots
        .kept(&task.id, BEFORE_KEPT)
        .await
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Protected files changed since the pre-run snapshot, each with its diff: the configured (or
/// the task's) `protected_paths` and whatever the verify commands reference, unless the task
/// expects them to change.
pub(super) async fn protected_changes(
    inner: &EngineState,
    task: &Task,
    settings: &CompletionPlan,
) -> Vec<(String, String)> {
    if settings.protected_changes_expected {
        return Vec::new();
    }
    let mut patterns = settings.protected_paths.clone();
    for command in &settings.verify_commands {
        patterns.extend(protected::referenced_paths(command));
    }
    if patterns.is_empty() {
        return Vec::new();
    }
    let changed = inner
        .snapshots
        .changed_since_baseline(&task.id, Path::new(&task.workdir), |path| {
            protected::is_protected(&patterns, path)
        })
        .await;
    match changed {
        Ok(changes) => changes.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(task = %task.id, error = %e, "could not compare the protected files");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use handoff_completion::budget::Budget;
    use handoff_task::CompletionPolicy;

    use super::*;

    fn settings(wall: Option<Duration>) -> CompletionPlan {
        CompletionPlan {
            policy: CompletionPolicy::Checks,
            verify_commands: Vec::new(),
            requires_changes: false,
            answer_only: false,
            success_criteria: Vec::new(),
            max_cycles: 5,
            min_confidence: 0.7,
            budget: Budget {
                wall,
                ..Budget::default()
            },
            verify_timeout: Duration::from_secs(600),
            verify_before: Duration::ZERO,
            protected_paths: Vec::new(),
            protected_changes_expected: false,
        }
    }

    fn task(timeout_ms: u64, started_at: i64) -> (u64, Option<i64>) {
        (timeout_ms, Some(started_at))
    }

    #[test]
    fn the_setting_the_deadline_and_the_wall_budget_each_bound_a_check() {
        let now = 1_000_000;
        let (limit, bound) = check_limit(task(3_600_000, now - 1000), &settings(None), now);
        assert_eq!((limit, bound), (Duration::from_secs(600), Bound::Setting));
        let (limit, bound) = check_limit(task(30_000, now - 10_000), &settings(None), now);
        assert_eq!((limit, bound), (Duration::from_secs(20), Bound::Deadline));
        let wall = Some(Duration::from_secs(15));
        let (limit, bound) = check_limit(task(30_000, now - 10_000), &settings(wall), now);
        assert_eq!((limit, bound), (Duration::from_secs(5), Bound::Budget));
        let (limit, _) = check_limit(task(30_000, now - 40_000), &settings(None), now);
        assert!(limit.is_zero(), "past the deadline nothing may run");
    }
}
