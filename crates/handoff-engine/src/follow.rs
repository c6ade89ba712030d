//! Following one run of a task (the first, or a continuation) to its end: its events are
//! recorded in batches, its output kept as artifacts, its requests handed to the supervisor,
//! its deadline and the loop guard enforced — the stop itself is the supervisor's.

use std::{path::PathBuf, sync::Arc, time::Duration};

use handoff_policy::loop_guard::Step;
use handoff_runner::{Run, RunControl, RunEvent, RunOutcome};
use handoff_task::{ArtifactKind, EventKind, NewEvent, Task, TaskStatus, unix_millis_now};
use serde_json::json;
use tokio::{sync::mpsc::Receiver, time::Instant};

use crate::{
    EngineError,
    artifacts::ArtifactSink,
    driver::Driver,
    finish::{Finish, StopReason, stopped},
    meter::{self, Meter},
    output::RunOutput,
};

/// Events written to the store per batch at most.
const BATCH: usize = 256;

/// Follows one run (first or continued) of the task to its end: records where it runs, makes
/// it the live run (stopping it at once when Handoff already decided to), and supervises it.
/// Returns how it ended and its recorded state.
pub(crate) async fn follow(
    d: &Driver<'_>,
    run: Run,
) -> Result<(Finish, Option<serde_json::Value>), EngineError> {
    let (inner, task) = (d.inner, d.task);
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
    d.link.attach(control, d.executor.capabilities()).await;
    if fenced {
        // Started after another instance took the task: the supervisor kills it now.
        d.link.stop(StopReason::Lost).await;
    }
    let mut following = Following::start(*d).await?;
    let outcome = following.events(run.events).await?;
    following.keep_output(outcome.as_ref()).await?;
    let stop = d.link.stop_reason().await;
    Ok((ended(stop, outcome, task), state))
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

/// One run being followed: its output on the way to the store, what it spent, and whether
/// its deadline or budget already stopped it.
struct Following<'a> {
    d: Driver<'a>,
    /// Where output too large for the store is kept.
    spill: PathBuf,
    output: RunOutput,
    meter: Meter,
    /// When the wall budget runs out, if it caps the task.
    budget_deadline: Option<Instant>,
    budget_hit: bool,
    deadline_hit: bool,
}

impl<'a> Following<'a> {
    async fn start(d: Driver<'a>) -> Result<Self, EngineError> {
        let spill = d.inner.artifacts_dir.join(d.task.id.as_str());
        let meter = Meter::start(d.inner, d.task, d.plan.completion.budget).await?;
        Ok(Self {
            output: RunOutput::new(&d.inner.config.tasks, &spill),
            budget_deadline: meter.wall_deadline(),
            meter,
            spill,
            d,
            budget_hit: false,
            deadline_hit: false,
        })
    }

    /// Records the run's events until it ends; its outcome, if it reported one.
    async fn events(
        &mut self,
        mut events: Receiver<RunEvent>,
    ) -> Result<Option<RunOutcome>, EngineError> {
        // The stop starts a grace before the deadline, so the kill lands on it.
        let stop_at = self.d.plan.deadline.stop_at;
        let mut buffer = Vec::with_capacity(BATCH);
        loop {
            tokio::select! {
                n = events.recv_many(&mut buffer, BATCH) => {
                    if n == 0 {
                        return Ok(None);
                    }
                    if let Some(outcome) = self.batch(&mut buffer).await? {
                        return Ok(Some(outcome));
                    }
                }
                () = tokio::time::sleep_until(self.output.due().unwrap_or(stop_at)),
                    if self.output.due().is_some() => {
                    let mut batch = Vec::new();
                    self.output.flush(&mut batch);
                    flush(&self.d, &mut batch).await?;
                }
                () = tokio::time::sleep_until(stop_at), if !self.deadline_hit => {
                    self.deadline_hit = true;
                    self.d.link.stop(StopReason::Timeout).await;
                }
                () = tokio::time::sleep_until(self.budget_deadline.unwrap_or(stop_at)),
                    if self.budget_deadline.is_some() && !self.budget_hit => {
                    self.budget_hit = true;
                    stop_for_budget(&self.d, self.meter.exhausted_at_wall()).await;
                }
            }
        }
    }

    /// Records one batch of the run's events; the outcome when the run reported its end.
    async fn batch(
        &mut self,
        buffer: &mut Vec<RunEvent>,
    ) -> Result<Option<RunOutcome>, EngineError> {
        let mut batch = Vec::with_capacity(buffer.len());
        let mut finished = None;
        for event in buffer.drain(..) {
            match event {
                RunEvent::Output { stream, line } => {
                    self.output.push(stream, &line, true, &mut batch).await;
                }
                RunEvent::OutputPart { stream, text } => {
                    self.output.push(stream, &text, false, &mut batch).await;
                }
                RunEvent::Event(event) => self.event(event, &mut batch).await,
                RunEvent::InputRequested(request) => {
                    self.output.flush(&mut batch);
                    flush(&self.d, &mut batch).await?;
                    self.d.link.requested(request).await?;
                }
                RunEvent::InputSettled { id } => {
                    self.output.flush(&mut batch);
                    flush(&self.d, &mut batch).await?;
                    self.d.link.settled(id).await?;
                }
                RunEvent::Finished(outcome) => finished = Some(outcome),
            }
        }
        if finished.is_some() || self.output.due().is_some_and(|due| due <= Instant::now()) {
            self.output.flush(&mut batch);
        }
        flush(&self.d, &mut batch).await?;
        if finished.is_some() {
            return Ok(finished);
        }
        if !self.budget_hit
            && let Some(why) = self.meter.exhausted()
        {
            self.budget_hit = true;
            stop_for_budget(&self.d, why).await;
        }
        Ok(None)
    }

    /// One of the executor's own events: its usage is metered and a tool call is shown to
    /// the loop guard, which may stop the run.
    async fn event(&mut self, event: NewEvent, batch: &mut Vec<NewEvent>) {
        self.output.flush(batch);
        self.meter.add(&event.data);
        if event.kind == EventKind::Tool
            && let Some((tool, step)) = self.d.link.tool_call(event.data.clone()).await
            && let Some(stop) = guard_step(&tool, &step, batch)
        {
            self.d.link.stop(stop).await;
        }
        batch.push(event);
    }

    /// Keeps what the run left as artifacts: its output and the diff of the task directory.
    async fn keep_output(self, outcome: Option<&RunOutcome>) -> Result<(), EngineError> {
        let Self {
            d,
            spill,
            mut output,
            ..
        } = self;
        if let Some(text) = outcome.and_then(|o| o.output.as_deref()) {
            // Executors without a stdout stream report their final answer instead.
            output.answer(text).await;
        }
        let mut last = Vec::new();
        let mut sinks = Vec::from(output.finish(&mut last));
        flush(&d, &mut last).await?;
        // Handoff's own baseline diff covers every change, whoever made it, since before the
        // first run: each run's artifact replaces the last and the final one spans every
        // cycle. The executor's view is the fallback.
        let own = own_diff(&d).await?;
        if let Some(diff) = own
            .as_deref()
            .or_else(|| outcome.and_then(|o| o.diff.as_deref()))
        {
            let tasks = &d.inner.config.tasks;
            let (inline, max) = (
                tasks.artifact_inline_bytes.bytes(),
                tasks.artifact_max_bytes.bytes(),
            );
            let path = spill.join("changes.diff");
            let mut sink = ArtifactSink::new(ArtifactKind::Diff, path, inline, max);
            sink.push_line(diff).await;
            sinks.push(sink);
        }
        for sink in sinks {
            store_artifact(&d, sink).await;
        }
        crate::branch::commit_run(&d, outcome.and_then(|o| o.output.as_deref())).await
    }
}

/// Stores one artifact of the run; a failing store costs the artifact, as with events, not the
/// task's end.
async fn store_artifact(d: &Driver<'_>, sink: ArtifactSink) {
    let Some(mut artifact) = sink.finish().await else {
        return;
    };
    if d.inner.store.is_shared() {
        // Other instances answer for this task too: they cannot read this disk.
        artifact = crate::artifacts::inline_for_peers(artifact).await;
    }
    if let Err(e) = d
        .inner
        .store
        .put_artifact(&d.task.id, unix_millis_now(), &artifact)
        .await
    {
        tracing::error!(
            task = %d.task.id,
            kind = artifact.kind.as_str(),
            error = %e,
            "could not store an artifact"
        );
    }
}

/// How the run ended: the stop Handoff decided on wins over what the executor reported.
fn ended(stop: Option<StopReason>, outcome: Option<RunOutcome>, task: &Task) -> Finish {
    let exit = outcome.as_ref().and_then(|o| o.exit);
    match (stop, outcome) {
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
    }
}

/// The least time the final diff gets, even past the task's deadline or after a stop.
const DIFF_FLOOR: Duration = Duration::from_secs(5);

/// Handoff's own diff of the task directory, bounded by what is left until the task's
/// deadline (at least [`DIFF_FLOOR`]) and by a stop decided while it is computed: a cancel
/// wins, and the diff is abandoned (git is killed) and said so. A run that was already stopped
/// (timeout, cancel) gets [`DIFF_FLOOR`].
async fn own_diff(d: &Driver<'_>) -> Result<Option<String>, EngineError> {
    let (inner, task, link) = (d.inner, d.task, d.link);
    let kill_at = d.plan.deadline.kill_at();
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
    if let Err(e) = d.note(note).await {
        tracing::error!(task = %task.id, error = %e, "could not record why no diff was kept");
    }
    Ok(None)
}

/// Stops the run because a budget cap ran out, saying so in the task's history.
async fn stop_for_budget(d: &Driver<'_>, why: String) {
    if let Err(e) = d.inner.record(&d.task.id, meter::stop_note(&why)).await {
        tracing::error!(task = %d.task.id, error = %e, "could not record why the budget stopped the run");
    }
    d.link.stop(StopReason::Budget(why)).await;
}

/// Writes the events gathered so far, keeping their order with the status changes that follow.
/// A store that fails (a full disk) costs these events, not the supervision: the run keeps
/// its deadline and its stop, and its output stays in the artifacts.
async fn flush(d: &Driver<'_>, batch: &mut Vec<NewEvent>) -> Result<(), EngineError> {
    let (inner, task) = (d.inner, d.task);
    if batch.is_empty() {
        return Ok(());
    }
    match inner
        .store
        .append_events(&task.id, unix_millis_now(), batch)
        .await
    {
        Ok(_) => inner.outbox.events(&task.id),
        Err(handoff_store::StoreError::Fenced { .. }) => {
            // Another instance took the task over (a write about it was fenced).
            tracing::warn!(task = %task.id, "this instance lost the task's lease; killing its run");
            d.link.stop(StopReason::Lost).await;
        }
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
