//! Following one run of a task (the first, or a continuation) to its end: its events are
//! recorded in batches, its output kept as artifacts, its requests handed to the supervisor,
//! its deadline and the loop guard enforced — the stop itself is the supervisor's.

use std::{sync::Arc, time::Duration};

use handoff_policy::loop_guard::Step;
use handoff_runner::{Run, RunControl, RunEvent};
use handoff_task::{ArtifactKind, EventKind, NewEvent, Task, TaskStatus, unix_millis_now};
use serde_json::json;
use tokio::time::Instant;

use crate::{
    EngineError,
    artifacts::ArtifactSink,
    finish::{Finish, StopReason, stopped},
    meter::{self, Meter},
    output::RunOutput,
    state::EngineState,
    supervisor::RunLink,
};

/// Events written to the store per batch at most.
const BATCH: usize = 256;

/// Follows one run (first or continued) of the task to its end: records where it runs, makes
/// it the live run (stopping it at once when Handoff already decided to), and supervises it.
/// Returns how it ended and its recorded state.
pub(crate) async fn follow(
    inner: &Arc<EngineState>,
    task: &Task,
    executor: &Arc<dyn handoff_runner::Executor>,
    run: Run,
) -> Result<(Finish, Option<serde_json::Value>), EngineError> {
    let link = inner
        .supervisors
        .link(&task.id)
        .ok_or_else(|| EngineError::Internal(format!("task {} has no supervisor", task.id)))?;
    let fenced = match inner
        .store
        .set_runner_state(&task.id, run.state.as_ref())
        .await
    {
        Ok(()) => false,
        Err(handoff_store::StoreError::Fenced { .. }) => true,
        // A failing store costs a restart's re-attach, never the run being followed.
        Err(e) => {
            tracing::error!(task = %task.id, error = %e, "could not record where the run is");
            false
        }
    };
    let state = run.state.clone();
    let control: Arc<dyn RunControl> = Arc::from(run.control);
    // A stop decided while the executor was starting is carried out by the supervisor now.
    link.attach(control, executor.capabilities()).await;
    if fenced {
        // Started after another instance took the task: the supervisor kills it now.
        link.stop(StopReason::Lost).await;
    }
    let finish = supervise(inner, task, run.events, &link).await?;
    Ok((finish, state))
}

/// Acts on the loop guard's step for one executor tool call: a warning and a denial are
/// recorded (from the deny step on, that tool's permission requests are denied, so the agent
/// reads why in the tool's result); the stop step ends the task as stuck.
fn guard_step(tool: &str, step: &Step, batch: &mut Vec<NewEvent>) -> Option<StopReason> {
    let message = step.message(tool)?;
    let level = match step {
        Step::Proceed => return None,
        Step::Warn { .. } => "warn",
        Step::Deny { .. } => "deny",
        Step::Stop { .. } => "stop",
    };
    batch.push(
        NewEvent::new(EventKind::Log, message.clone())
            .with_data(json!({ "loop_guard": level, "tool": tool })),
    );
    matches!(step, Step::Stop { .. }).then_some(StopReason::Stuck(message))
}

/// Records the run's events until it ends; returns how it ended.
async fn supervise(
    inner: &Arc<EngineState>,
    task: &Task,
    mut events: tokio::sync::mpsc::Receiver<RunEvent>,
    link: &RunLink,
) -> Result<Finish, EngineError> {
    let timeout = Duration::from_millis(task.options.timeout_ms);
    // A re-attached run keeps its original deadline.
    let elapsed = task
        .started_at
        .map_or(0, |start| unix_millis_now().saturating_sub(start));
    let remaining =
        timeout.saturating_sub(Duration::from_millis(u64::try_from(elapsed).unwrap_or(0)));
    // The stop starts a grace before the deadline, so the kill lands on it.
    let grace = crate::finish::timeout_grace(task, inner.config.tasks.cancel_grace);
    let deadline = Instant::now() + remaining.saturating_sub(grace);
    let spill = inner.artifacts_dir.join(task.id.as_str());
    let inline = inner.config.tasks.artifact_inline_bytes.bytes();
    let max = inner.config.tasks.artifact_max_bytes.bytes();
    let mut output = RunOutput::new(&inner.config.tasks, &spill);
    let mut buffer = Vec::with_capacity(BATCH);
    let mut deadline_hit = false;
    let mut meter = Meter::start(inner, task).await?;
    let budget_deadline = meter.wall_deadline();
    let mut budget_hit = false;

    let outcome = loop {
        tokio::select! {
            n = events.recv_many(&mut buffer, BATCH) => {
                if n == 0 {
                    break None;
                }
                let mut batch = Vec::with_capacity(n);
                let mut finished = None;
                for event in buffer.drain(..) {
                    match event {
                        RunEvent::Output { stream, line } => {
                            output.push(stream, &line, true, &mut batch).await;
                        }
                        RunEvent::OutputPart { stream, text } => {
                            output.push(stream, &text, false, &mut batch).await;
                        }
                        RunEvent::Event(event) => {
                            output.flush(&mut batch);
                            meter.add(&event.data);
                            if event.kind == EventKind::Tool
                                && let Some((tool, step)) = link.tool_call(event.data.clone()).await
                                && let Some(stop) = guard_step(&tool, &step, &mut batch)
                            {
                                link.stop(stop).await;
                            }
                            batch.push(event);
                        }
                        RunEvent::InputRequested(request) => {
                            output.flush(&mut batch);
                            flush(inner, task, &mut batch).await?;
                            link.requested(request).await?;
                        }
                        RunEvent::InputSettled { id } => {
                            output.flush(&mut batch);
                            flush(inner, task, &mut batch).await?;
                            link.settled(id).await?;
                        }
                        RunEvent::Finished(outcome) => finished = Some(outcome),
                    }
                }
                if finished.is_some() || output.due().is_some_and(|due| due <= Instant::now()) {
                    output.flush(&mut batch);
                }
                flush(inner, task, &mut batch).await?;
                if let Some(outcome) = finished {
                    break Some(outcome);
                }
                if !budget_hit && let Some(why) = meter.exhausted() {
                    budget_hit = true;
                    stop_for_budget(inner, task, link, why).await?;
                }
            }
            () = tokio::time::sleep_until(output.due().unwrap_or(deadline)),
                if output.due().is_some() => {
                let mut batch = Vec::new();
                output.flush(&mut batch);
                flush(inner, task, &mut batch).await?;
            }
            () = tokio::time::sleep_until(deadline), if !deadline_hit => {
                deadline_hit = true;
                link.stop(StopReason::Timeout).await;
            }
            () = tokio::time::sleep_until(budget_deadline.unwrap_or(deadline)),
                if budget_deadline.is_some() && !budget_hit => {
                budget_hit = true;
                stop_for_budget(inner, task, link, meter.exhausted_at_wall()).await?;
            }
        }
    };

    if let Some(text) = outcome.as_ref().and_then(|o| o.output.as_deref()) {
        // Executors without a stdout stream report their final answer instead.
        output.answer(text).await;
    }
    let mut last = Vec::new();
    let mut sinks = Vec::from(output.finish(&mut last));
    flush(inner, task, &mut last).await?;
    // Handoff's own baseline diff covers every change, whoever made it, since before the first
    // run: each run's artifact replaces the last and the final one spans every cycle. The
    // executor's view is the fallback.
    let own = own_diff(inner, task, link, deadline + grace).await?;
    if let Some(diff) = own
        .as_deref()
        .or_else(|| outcome.as_ref().and_then(|o| o.diff.as_deref()))
    {
        let mut sink =
            ArtifactSink::new(ArtifactKind::Diff, spill.join("changes.diff"), inline, max);
        sink.push_line(diff).await;
        sinks.push(sink);
    }
    for sink in sinks {
        let Some(mut artifact) = sink.finish().await else {
            continue;
        };
        if inner.store.is_shared() {
            // Other instances answer for this task too: they cannot read this disk.
            artifact = crate::artifacts::inline_for_peers(artifact).await;
        }
        // As with events, a failing store costs the artifact, not the task's end.
        if let Err(e) = inner
            .store
            .put_artifact(&task.id, unix_millis_now(), &artifact)
            .await
        {
            tracing::error!(
                task = %task.id,
                kind = artifact.kind.as_str(),
                error = %e,
                "could not store an artifact"
            );
        }
    }

    let stop = link.stop_reason().await;
    let exit = outcome.as_ref().and_then(|o| o.exit);
    Ok(match (stop, outcome) {
        (Some(stop), _) => stopped(stop, task, exit),
        (None, Some(outcome)) if outcome.success => Finish {
            status: TaskStatus::Completed,
            reason: "completed".to_owned(),
            exit,
            error: None,
            requeue: false,
        },
        (None, Some(outcome)) => {
            let error = outcome
                .error
                .unwrap_or_else(|| "the executor reported failure".to_owned());
            Finish {
                status: TaskStatus::Failed,
                reason: error.clone(),
                exit,
                error: Some(error),
                requeue: false,
            }
        }
        (None, None) => Finish::failed("the executor stopped without reporting an outcome"),
    })
}

/// The least time the final diff gets, even past the task's deadline or after a stop.
const DIFF_FLOOR: Duration = Duration::from_secs(5);

/// Handoff's own diff of the task directory, bounded by what is left until `kill_at` (the
/// task's deadline; at least [`DIFF_FLOOR`]) and by a stop decided while it is computed: a
/// cancel wins, and the diff is abandoned (git is killed) and said so. A run that was already
/// stopped (timeout, cancel) gets [`DIFF_FLOOR`].
async fn own_diff(
    inner: &EngineState,
    task: &Task,
    link: &RunLink,
    kill_at: Instant,
) -> Result<Option<String>, EngineError> {
    let now = Instant::now();
    let already_stopped = link.is_stopped();
    let until = if already_stopped {
        now + DIFF_FLOOR
    } else {
        kill_at.max(now + DIFF_FLOOR)
    };
    let workdir = std::path::Path::new(&task.workdir);
    let diff = inner.snapshots.diff(&task.id, workdir, Some(until));
    let diffed = if already_stopped {
        Some(diff.await)
    } else {
        tokio::select! {
            diffed = diff => Some(diffed),
            () = link.stopped() => None,
        }
    };
    let note = match diffed {
        Some(Ok(diff)) => return Ok(diff),
        Some(Err(e)) => format!("could not compute the diff: {e}"),
        None => "the diff was abandoned: the task was stopped while it was computed".to_owned(),
    };
    // A failing store costs the note, not the run's outcome.
    if let Err(e) = record_note(inner, task, note).await {
        tracing::error!(task = %task.id, error = %e, "could not record why no diff was kept");
    }
    Ok(None)
}

/// Stops the run because a budget cap ran out, saying so in the task's history.
async fn stop_for_budget(
    inner: &EngineState,
    task: &Task,
    link: &RunLink,
    why: String,
) -> Result<(), EngineError> {
    if let Err(e) = inner.record(&task.id, meter::stop_note(&why)).await {
        tracing::error!(task = %task.id, error = %e, "could not record why the budget stopped the run");
    }
    link.stop(StopReason::Budget(why)).await;
    Ok(())
}

/// Records one of Handoff's own notes on the task.
pub(crate) async fn record_note(
    inner: &EngineState,
    task: &Task,
    note: String,
) -> Result<(), EngineError> {
    inner
        .record(&task.id, NewEvent::new(EventKind::Log, note))
        .await
        .map(drop)
}

/// Stops a run whose task another instance took over (a write about it was fenced).
async fn lost(inner: &EngineState, task: &Task) {
    tracing::warn!(task = %task.id, "this instance lost the task's lease; killing its run");
    if let Some(link) = inner.supervisors.link(&task.id) {
        link.stop(StopReason::Lost).await;
    }
}

/// Writes the events gathered so far, keeping their order with the status changes that follow.
/// A store that fails (a full disk) costs these events, not the supervision: the run keeps
/// its deadline and its stop, and its output stays in the artifacts.
async fn flush(
    inner: &EngineState,
    task: &Task,
    batch: &mut Vec<NewEvent>,
) -> Result<(), EngineError> {
    if batch.is_empty() {
        return Ok(());
    }
    match inner
        .store
        .append_events(&task.id, unix_millis_now(), batch)
        .await
    {
        Ok(_) => inner.outbox.events(&task.id),
        Err(handoff_store::StoreError::Fenced { .. }) => lost(inner, task).await,
        Err(e) => tracing::error!(
            task = %task.id,
            error = %e,
            lost = batch.len(),
            "could not store the run's events"
        ),
    }
    batch.clear();
    Ok(())
}
