//! Supervision of one run: start the executor, record what it reports, enforce the deadline,
//! and settle the task in a truthful final state.

use std::{path::PathBuf, sync::Arc, time::Duration};

use handoff_policy::{hooks::HookEvent, loop_guard::Step};
use handoff_runner::{Run, RunControl, RunEvent, RunSpec};
use handoff_task::{
    ArtifactKind, EventKind, ExitInfo, NewEvent, Task, TaskStatus, unix_millis_now,
};
use serde_json::json;
use tokio::time::Instant;

use crate::{
    EngineError,
    artifacts::ArtifactSink,
    engine::{Inner, StopReason},
    input,
};

/// Why a run stopped by a server shutdown failed.
const SHUT_DOWN: &str = "interrupted: server shut down";

/// Events written to the store per batch at most.
const BATCH: usize = 256;

/// How a run ended, before it is written down.
pub(crate) struct Finish {
    pub(crate) status: TaskStatus,
    pub(crate) reason: String,
    pub(crate) exit: Option<ExitInfo>,
    pub(crate) error: Option<String>,
    /// Back to the queue instead (server shutdown of a task that opted in to re-running).
    pub(crate) requeue: bool,
}

impl Finish {
    pub(crate) fn failed(error: impl Into<String>) -> Self {
        let error = error.into();
        Self {
            status: TaskStatus::Failed,
            reason: error.clone(),
            exit: None,
            error: Some(error),
            requeue: false,
        }
    }
}

/// Runs a claimed (`running`) task to its end. `resumed` is a run re-attached after a restart.
pub(crate) async fn drive(inner: Arc<Inner>, task: Task, resumed: Option<Run>) {
    inner.workspace_opened(&task).await;
    let finish = match execute(&inner, &task, resumed).await {
        Ok(finish) => finish,
        Err(e) => Finish::failed(format!("handoff could not supervise the run: {e}")),
    };
    let finish = stop_hooks(&inner, &task, finish).await;
    let status = finish.status;
    settle(&inner, &task, finish).await;
    inner.policy.forget(&task.id);
    let ended = inner
        .policy
        .task_hook(HookEvent::TaskEnd, &task, Some(status.as_str()))
        .await;
    for error in ended.errors {
        tracing::warn!(task = %task.id, error = %error, "TaskEnd hook");
    }
}

/// Most consecutive Stop-hook blocks honoured before the task ends anyway.
const MAX_STOP_BLOCKS: u32 = 8;

/// A run that ended normally passes the Stop hooks: a block keeps the task from being
/// reported completed, with the hook's reason (resuming the executor with it as the next
/// prompt belongs to the completion evaluator).
async fn stop_hooks(inner: &Arc<Inner>, task: &Task, finish: Finish) -> Finish {
    if finish.status != TaskStatus::Completed {
        return finish;
    }
    let verdict = inner.policy.task_hook(HookEvent::Stop, task, None).await;
    let Some(reason) = verdict.block.or(verdict.stop) else {
        return finish;
    };
    if !inner.policy.stop_block(&task.id, MAX_STOP_BLOCKS) {
        return finish;
    }
    let message = format!("a Stop hook did not accept the result: {reason}");
    let event = NewEvent::new(EventKind::Verdict, message.clone())
        .with_data(json!({ "by": "hook", "event": "Stop", "done": false, "reason": reason }));
    if let Err(e) = inner.record(&task.id, event).await {
        tracing::warn!(task = %task.id, error = %e, "could not record the Stop hook verdict");
    }
    Finish {
        exit: finish.exit,
        ..Finish::failed(message)
    }
}

async fn execute(
    inner: &Arc<Inner>,
    task: &Task,
    resumed: Option<Run>,
) -> Result<Finish, EngineError> {
    let Some(executor) = inner.executors.get(&task.executor) else {
        return Ok(Finish::failed(format!(
            "executor `{}` is not available on this server",
            task.executor
        )));
    };
    let run = match resumed {
        Some(run) => run,
        None => {
            let workdir = PathBuf::from(&task.workdir);
            if let Err(e) = inner
                .workdirs
                .prepare(&workdir, task.options.caller_workdir)
                .await
            {
                return Ok(Finish::failed(e));
            }
            if let Err(e) = inner.snapshots.baseline(&task.id, &workdir).await {
                record_note(inner, task, format!("no diff will be kept: {e}")).await?;
            }
            let started = inner
                .policy
                .task_hook(HookEvent::TaskStart, task, None)
                .await;
            if let Some(reason) = started.block.or(started.stop) {
                inner.snapshots.discard(&task.id).await;
                return Ok(Finish::failed(format!(
                    "refused by a TaskStart hook: {reason}"
                )));
            }
            let prompt = compose_prompt(inner, task).await?;
            if crate::evaluate::settings(inner, task).policy
                == handoff_task::CompletionPolicy::Manager
            {
                return crate::evaluate::manager::run(inner, task, &executor, &prompt).await;
            }
            let spec = RunSpec {
                task_id: task.id.clone(),
                prompt,
                workdir,
                preset_rules: Some(inner.policy.preset_for(task)),
                continuable: crate::evaluate::continuable(inner, task),
            };
            let started = executor.start(spec).await;
            inner
                .metrics
                .executor_call(executor.name(), "start", started.is_ok());
            match started {
                Ok(run) => run,
                Err(e) => {
                    inner.snapshots.discard(&task.id).await;
                    return Ok(Finish::failed(format!("could not start the executor: {e}")));
                }
            }
        }
    };
    let (finish, state) = follow(inner, task, &executor, run).await?;
    crate::evaluate::verify(inner, task, &executor, state, finish).await
}

/// Follows one run (first or continued) of the task to its end: records where it runs, makes
/// it the live run (stopping it at once when Handoff already decided to), and supervises it.
/// Returns how it ended and its recorded state.
pub(crate) async fn follow(
    inner: &Arc<Inner>,
    task: &Task,
    executor: &Arc<dyn handoff_runner::Executor>,
    run: Run,
) -> Result<(Finish, Option<serde_json::Value>), EngineError> {
    inner
        .store
        .set_runner_state(&task.id, run.state.as_ref())
        .await?;
    let state = run.state.clone();
    let control: Arc<dyn RunControl> = Arc::from(run.control);
    if attach(inner, task, executor.as_ref(), &control).is_some() {
        stop_in_background(inner, control.clone());
    }
    let finish = supervise(inner, task, run.events, control).await?;
    Ok((finish, state))
}

/// Makes `control` the task's live run control; returns a stop Handoff already decided on
/// (the caller stops the run then).
pub(crate) fn attach(
    inner: &Arc<Inner>,
    task: &Task,
    executor: &dyn handoff_runner::Executor,
    control: &Arc<dyn RunControl>,
) -> Option<StopReason> {
    let mut live = inner.live();
    let entry = live
        .entry(task.id.clone())
        .or_insert_with(|| crate::engine::LiveRun {
            control: None,
            capabilities: executor.capabilities(),
            stop: None,
            pending: Vec::new(),
        });
    entry.control = Some(control.clone());
    entry.capabilities = executor.capabilities();
    entry.stop.clone()
}

/// The task description, followed by any messages sent while it waited in the queue.
async fn compose_prompt(inner: &Inner, task: &Task) -> Result<String, EngineError> {
    let (events, _) = inner.store.events(&task.id, 0, 1000).await?;
    let queued: Vec<String> = events
        .iter()
        .filter(|e| e.kind == EventKind::Message)
        .map(|e| {
            let kind = e
                .data
                .get("message_type")
                .and_then(|v| v.as_str())
                .unwrap_or("update");
            format!("- [{kind}] {}", e.message)
        })
        .collect();
    if queued.is_empty() {
        return Ok(task.description.clone());
    }
    inner
        .record(
            &task.id,
            NewEvent::new(
                EventKind::Log,
                format!("{} queued message(s) attached to the prompt", queued.len()),
            ),
        )
        .await?;
    Ok(format!(
        "{}\n\nMessages received while this task was queued:\n{}",
        task.description,
        queued.join("\n")
    ))
}

/// Acts on the loop guard's step for one executor tool call: a warning and a denial are
/// recorded (from the deny step on, that tool's permission requests are denied, so the agent
/// reads why in the tool's result); the stop step ends the task as stuck.
fn guard_step(
    inner: &Arc<Inner>,
    task: &Task,
    control: &Arc<dyn RunControl>,
    tool: &str,
    step: &Step,
    batch: &mut Vec<NewEvent>,
) {
    let Some(message) = step.message(tool) else {
        return;
    };
    let level = match step {
        Step::Proceed => return,
        Step::Warn { .. } => "warn",
        Step::Deny { .. } => "deny",
        Step::Stop { .. } => "stop",
    };
    batch.push(
        NewEvent::new(EventKind::Log, message.clone())
            .with_data(json!({ "loop_guard": level, "tool": tool })),
    );
    if matches!(step, Step::Stop { .. }) {
        if let Some(run) = inner.live().get_mut(&task.id) {
            run.stop.get_or_insert(StopReason::Stuck(message));
        }
        stop_in_background(inner, control.clone());
    }
}

fn stop_in_background(inner: &Arc<Inner>, control: Arc<dyn RunControl>) {
    let grace = inner.config.tasks.cancel_grace;
    tokio::spawn(async move {
        if let Err(e) = control.cancel(grace).await {
            tracing::warn!(error = %e, "stopping a run failed");
        }
    });
}

pub(crate) async fn supervise(
    inner: &Arc<Inner>,
    task: &Task,
    mut events: tokio::sync::mpsc::Receiver<RunEvent>,
    control: Arc<dyn RunControl>,
) -> Result<Finish, EngineError> {
    let timeout = Duration::from_millis(task.options.timeout_ms);
    // A re-attached run keeps its original deadline.
    let elapsed = task
        .started_at
        .map_or(0, |start| unix_millis_now().saturating_sub(start));
    let remaining =
        timeout.saturating_sub(Duration::from_millis(u64::try_from(elapsed).unwrap_or(0)));
    let deadline = Instant::now() + remaining;
    let spill = inner.artifacts_dir.join(task.id.as_str());
    let inline = inner.config.tasks.artifact_inline_bytes.bytes();
    let max = inner.config.tasks.artifact_max_bytes.bytes();
    let mut stdout = ArtifactSink::new(ArtifactKind::Output, spill.join("output.txt"), inline, max);
    let mut stderr = ArtifactSink::new(ArtifactKind::Log, spill.join("log.txt"), inline, max);
    let mut buffer = Vec::with_capacity(BATCH);
    let mut deadline_hit = false;

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
                            let sink = match stream {
                                handoff_runner::OutputStream::Stdout => &mut stdout,
                                handoff_runner::OutputStream::Stderr => &mut stderr,
                            };
                            sink.push_line(&line).await?;
                            batch.push(
                                NewEvent::new(EventKind::Output, line)
                                    .with_data(json!({ "stream": stream.as_str() })),
                            );
                        }
                        RunEvent::Event(event) => {
                            if event.kind == EventKind::Tool
                                && let Some((tool, step)) = inner.policy.tool_call(&task.id, &event.data)
                            {
                                guard_step(inner, task, &control, &tool, &step, &mut batch);
                            }
                            batch.push(event);
                        }
                        RunEvent::InputRequested(request) => {
                            flush(inner, task, &mut batch).await?;
                            input::requested(inner, task, &control, request).await?;
                        }
                        RunEvent::InputSettled { id } => {
                            flush(inner, task, &mut batch).await?;
                            input::settled(inner, &task.id, &id).await?;
                        }
                        RunEvent::Finished(outcome) => finished = Some(outcome),
                    }
                }
                flush(inner, task, &mut batch).await?;
                if let Some(outcome) = finished {
                    break Some(outcome);
                }
            }
            () = tokio::time::sleep_until(deadline), if !deadline_hit => {
                deadline_hit = true;
                if let Some(run) = inner.live().get_mut(&task.id) {
                    run.stop.get_or_insert(StopReason::Timeout);
                }
                stop_in_background(inner, control.clone());
            }
        }
    };

    if let Some(text) = outcome.as_ref().and_then(|o| o.output.as_deref()) {
        // Executors without a stdout stream report their final answer instead.
        stdout.push_line(text).await?;
    }
    let mut sinks = vec![stdout, stderr];
    // Handoff's own baseline diff covers every change, whoever made it; the executor's view is
    // the fallback.
    let own = match inner
        .snapshots
        .diff(&task.id, std::path::Path::new(&task.workdir))
        .await
    {
        Ok(diff) => diff,
        Err(e) => {
            record_note(inner, task, format!("could not compute the diff: {e}")).await?;
            None
        }
    };
    if let Some(diff) = own
        .as_deref()
        .or_else(|| outcome.as_ref().and_then(|o| o.diff.as_deref()))
    {
        let mut sink =
            ArtifactSink::new(ArtifactKind::Diff, spill.join("changes.diff"), inline, max);
        sink.push_line(diff).await?;
        sinks.push(sink);
    }
    for sink in sinks {
        if let Some(artifact) = sink.finish().await? {
            inner
                .store
                .put_artifact(&task.id, unix_millis_now(), &artifact)
                .await?;
        }
    }

    let stop = inner.live().get(&task.id).and_then(|run| run.stop.clone());
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

/// The end of a run Handoff stopped.
pub(crate) fn stopped(stop: StopReason, task: &Task, exit: Option<ExitInfo>) -> Finish {
    match stop {
        StopReason::Cancelled(reason) => Finish {
            status: TaskStatus::Cancelled,
            reason: format!("cancelled: {reason}"),
            exit,
            error: Some(format!("cancelled: {reason}")),
            requeue: false,
        },
        StopReason::Stuck(reason) => Finish {
            exit,
            ..Finish::failed(format!("stuck: {reason}"))
        },
        StopReason::Shutdown => Finish {
            requeue: task.options.requeue_on_restart,
            exit,
            ..Finish::failed(SHUT_DOWN)
        },
        StopReason::Timeout => {
            let error = format!("timed out after {}ms", task.options.timeout_ms);
            Finish {
                status: TaskStatus::Timeout,
                reason: error.clone(),
                exit,
                error: Some(error),
                requeue: false,
            }
        }
    }
}

/// Records one of Handoff's own notes on the task.
pub(crate) async fn record_note(
    inner: &Inner,
    task: &Task,
    note: String,
) -> Result<(), EngineError> {
    inner
        .record(&task.id, NewEvent::new(EventKind::Log, note))
        .await
        .map(drop)
}

/// Writes the events gathered so far, keeping their order with the status changes that follow.
async fn flush(inner: &Inner, task: &Task, batch: &mut Vec<NewEvent>) -> Result<(), EngineError> {
    if !batch.is_empty() {
        inner
            .store
            .append_events(&task.id, unix_millis_now(), batch)
            .await?;
        batch.clear();
        inner.touched(&task.id, false);
    }
    Ok(())
}

/// Writes the final state. A task that is paused or waiting for input when its run ends passes
/// through `running` so the state machine stays the single authority.
async fn settle(inner: &Arc<Inner>, task: &Task, finish: Finish) {
    if finish.requeue && requeue(inner, task).await {
        inner.live().remove(&task.id);
        return;
    }
    for _ in 0..5 {
        let current = match inner.store.get_task(&task.id).await {
            Ok(Some(current)) => current,
            Ok(None) => break,
            Err(e) => {
                tracing::error!(task = %task.id, error = %e, "could not read task to settle it");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if current.status.is_terminal() {
            break;
        }
        let step = if current.status.can_become(finish.status) {
            finish.status
        } else {
            TaskStatus::Running
        };
        let (reason, exit, error) = if step == finish.status {
            (finish.reason.clone(), finish.exit, finish.error.clone())
        } else {
            ("run ended".to_owned(), None, None)
        };
        match inner
            .change_status(&current, step, reason, exit, error)
            .await
        {
            Ok(Some(updated)) if updated.status.is_terminal() => break,
            Ok(_) => continue,
            Err(e) => {
                tracing::error!(task = %task.id, error = %e, "could not settle task");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    inner.live().remove(&task.id);
    inner.wake.notify_one();
    if inner.config.tasks.workdir_cleanup == handoff_config::WorkdirCleanup::OnCompletion
        && !task.options.caller_workdir
    {
        inner
            .workdirs
            .remove(std::path::Path::new(&task.workdir))
            .await;
    }
}

/// Puts a task stopped by shutdown back in the queue; false if it was no longer active.
async fn requeue(inner: &Inner, task: &Task) -> bool {
    let Ok(Some(current)) = inner.store.get_task(&task.id).await else {
        return false;
    };
    if !current.status.is_active() {
        return false;
    }
    match inner
        .store
        .requeue(
            &task.id,
            current.status,
            unix_millis_now(),
            "re-queued: server shut down",
        )
        .await
    {
        Ok(Some(_)) => true,
        Ok(None) => false,
        Err(e) => {
            tracing::error!(task = %task.id, error = %e, "could not re-queue at shutdown");
            false
        }
    }
}
