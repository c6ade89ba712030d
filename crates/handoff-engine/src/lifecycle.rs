//! The lifecycle of a claimed task: prepare its directory and baseline, start the executor,
//! follow the run, let the completion evaluator verify (and continue) it, pass the Stop hooks,
//! and settle the task in a truthful final state. Live steering goes through the run's
//! supervisor, which this driver reports to and ends.

use std::{path::PathBuf, sync::Arc, time::Duration};

use handoff_policy::hooks::HookEvent;
use handoff_runner::{Claim, Run, RunSpec};
use handoff_task::{CompletionPolicy, EventKind, NewEvent, Task, TaskStatus, unix_millis_now};
use serde_json::json;

use crate::{
    EngineError,
    driver::{Driver, record_note},
    finish::{Finish, StopReason},
    follow::follow,
    plan::RunPlan,
    state::EngineState,
    supervisor::RunLink,
};

/// Runs a claimed (`running`) task to its end under `plan`. `resumed` is a run re-attached
/// after a restart.
pub(crate) async fn drive(
    inner: Arc<EngineState>,
    task: Task,
    plan: Arc<RunPlan>,
    resumed: Option<Run>,
    link: RunLink,
) {
    if resumed.is_none() && ended_while_claimed(&inner, &task).await {
        link.end(&inner.supervisors).await;
        return;
    }
    let (task, claim) = match resumed {
        None => crate::pooled::claim(&inner, &plan, &link, task).await,
        Some(_) => (task, None),
    };
    tracing::info!(task = %task.id, agent = %task.agent_id, executor = %task.executor, resumed = resumed.is_some(), "task running");
    // The integrations record what the task's agent is owed before anything else happens.
    inner.outbox.started(&task).await;
    let finish = match execute(&inner, &task, &plan, &link, resumed, claim).await {
        Ok(finish) => finish,
        Err(e) => Finish::failed(format!("handoff could not supervise the run: {e}")),
    };
    if finish.is_lost() || link.stop_reason().await == Some(StopReason::Lost) {
        // Another instance holds the task (or takes it over): its owner decides its state,
        // and its files are the new run's.
        tracing::warn!(task = %task.id, "run killed: the task is another instance's now; nothing is settled here");
        inner.snapshots.discard(&task.id).await;
        link.end(&inner.supervisors).await;
        inner.wake.notify_one();
        return;
    }
    let finish = stop_hooks(&inner, &link, &task, finish).await;
    if finish.status == TaskStatus::Completed {
        crate::delivery::deliver(&inner, &task).await;
    }
    let status = finish.status;
    settle(&inner, &task, finish).await;
    tracing::info!(task = %task.id, outcome = %status, "task run ended");
    // Every cycle diffed against this baseline; once settled (or re-queued, which takes a
    // fresh one) it is no longer needed.
    inner.snapshots.discard(&task.id).await;
    link.end(&inner.supervisors).await;
    inner.wake.notify_one();
    let ended = inner
        .policy
        .task_hook(HookEvent::TaskEnd, &task, Some(status.as_str()), false)
        .await;
    for error in ended.errors {
        tracing::warn!(task = %task.id, error = %error, "TaskEnd hook");
    }
}

/// A cancel that found no supervisor (the task was between its claim and its run) settled the
/// task itself: its run must never start.
async fn ended_while_claimed(inner: &EngineState, task: &Task) -> bool {
    let current = match inner.store.get_task(&task.id).await {
        Ok(Some(current)) if current.status.is_terminal() => current,
        _ => return false,
    };
    let note = format!(
        "not started: the task was {} while it was being claimed",
        current.status
    );
    if let Err(e) = record_note(inner, task, note).await {
        tracing::warn!(task = %task.id, error = %e, "could not record why the run never started");
    }
    true
}

/// Most consecutive Stop-hook blocks honoured before the task ends anyway.
const MAX_STOP_BLOCKS: u32 = 8;

/// A run that ended normally passes the Stop hooks: a block keeps the task from being
/// reported completed, with the hook's reason (resuming the executor with it as the next
/// prompt belongs to the completion evaluator).
async fn stop_hooks(
    inner: &Arc<EngineState>,
    link: &RunLink,
    task: &Task,
    finish: Finish,
) -> Finish {
    if finish.status != TaskStatus::Completed {
        return finish;
    }
    let active = link.stop_hook_active();
    let verdict = inner
        .policy
        .task_hook(HookEvent::Stop, task, None, active)
        .await;
    let Some(reason) = verdict.block.or(verdict.stop) else {
        return finish;
    };
    if !link.stop_block(MAX_STOP_BLOCKS).await {
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

/// Starts the run (or takes the re-attached one), follows it and lets the evaluator verify it.
async fn execute(
    inner: &Arc<EngineState>,
    task: &Task,
    plan: &RunPlan,
    link: &RunLink,
    resumed: Option<Run>,
    claim: Option<Claim>,
) -> Result<Finish, EngineError> {
    let Some(executor) = &plan.executor else {
        return Ok(Finish::failed(format!(
            "executor `{}` is not available on this server",
            task.executor
        )));
    };
    let d = Driver {
        inner,
        task,
        plan,
        executor,
        link,
    };
    let run = match resumed {
        Some(run) => run,
        None => match start(&d, claim).await? {
            Started::Run(run) => run,
            Started::Ended(finish) => return Ok(finish),
        },
    };
    let (finish, state) = follow(&d, run).await?;
    crate::evaluate::verify(&d, state, finish).await
}

/// What starting a task's first run led to.
enum Started {
    /// The executor runs.
    Run(Run),
    /// The task ended before (or instead of) a run of its own: refused, not startable, or
    /// run as a managed plan.
    Ended(Finish),
}

/// Prepares the task's directory and baseline, passes the TaskStart hooks and starts the
/// executor (or the manager, which starts its own runs).
async fn start(d: &Driver<'_>, claim: Option<Claim>) -> Result<Started, EngineError> {
    let (inner, task) = (d.inner, d.task);
    let workdir = PathBuf::from(&task.workdir);
    let name = crate::worktree::branch_for(task);
    let branch = crate::workdir::Branch {
        name: &name,
        base: task.options.base.as_deref(),
        // A follow-up round finds the branch its earlier rounds made.
        own: name == crate::worktree::default_branch(&task.id, &task.description)
            || task.options.round > 1,
    };
    let prepared = match &claim {
        Some(_) => inner.workdirs.adopt(&workdir, &task.options, &branch).await,
        None => {
            inner
                .workdirs
                .prepare(&workdir, &task.options, &branch)
                .await
        }
    };
    if let Err(e) = prepared {
        return Ok(Started::Ended(Finish::failed(e)));
    }
    if d.on_branch() {
        d.note(format!("works on branch {name} of the repository"))
            .await?;
    }
    let tests_before = crate::evaluate::integrity::run_before(d).await?;
    if let Err(e) = inner.snapshots.baseline(&task.id, &workdir).await {
        d.note(format!("no diff will be kept: {e}")).await?;
    }
    crate::evaluate::integrity::keep_before(inner, task, &tests_before).await;
    let started = inner
        .policy
        .task_hook(HookEvent::TaskStart, task, None, false)
        .await;
    if let Some(reason) = started.block.or(started.stop) {
        inner.snapshots.discard(&task.id).await;
        let why = format!("refused by a TaskStart hook: {reason}");
        return Ok(Started::Ended(Finish::failed(why)));
    }
    let prompt = compose_prompt(d).await?;
    crate::gateway::ready(inner, task).await;
    if d.plan.completion.policy == CompletionPolicy::Manager {
        let finish = crate::evaluate::manager::run(d, &prompt).await?;
        return Ok(Started::Ended(finish));
    }
    let (env, env_hidden) = crate::gateway::run_env(inner, task);
    let spec = RunSpec {
        task_id: task.id.clone(),
        attempt: task.fence,
        prompt,
        workdir,
        preset_rules: Some(d.plan.preset_rules.clone()),
        continuable: d.plan.continuable(),
        env,
        env_hidden,
    };
    let started = match claim {
        Some(claim) => d.executor.start_claimed(spec, claim).await,
        None => d.executor.start(spec).await,
    };
    inner
        .metrics
        .executor_call(d.executor.name(), "start", started.is_ok());
    match started {
        Ok(run) => Ok(Started::Run(run)),
        Err(e) => {
            inner.snapshots.discard(&task.id).await;
            let why = format!("could not start the executor: {e}");
            Ok(Started::Ended(Finish::failed(why)))
        }
    }
}

/// The run's prompt (see [`crate::follow_up::prompt_of`]), with a note when it carries
/// messages.
async fn compose_prompt(d: &Driver<'_>) -> Result<String, EngineError> {
    let (inner, task) = (d.inner, d.task);
    let (events, _) = inner.store.events(&task.id, 0, PROMPT_EVENTS).await?;
    let events = if events.len() as u32 >= PROMPT_EVENTS {
        // A long history: the round's opening and its messages are at its end.
        inner.store.recent_events(&task.id, PROMPT_EVENTS).await?
    } else {
        events
    };
    let changed = if task.options.round > 1 {
        last_diff_stat(inner, task).await
    } else {
        Vec::new()
    };
    let branch = d.on_branch().then(|| crate::worktree::branch_for(task));
    let prompt = crate::follow_up::prompt_of(task, &events, branch.as_deref(), &changed);
    if prompt != task.description {
        let note = if task.options.round > 1 {
            format!(
                "follow-up round {}: the previous round's answer, changes and the follow-up \
                 messages attached to the prompt",
                task.options.round
            )
        } else {
            "messages sent while it was queued attached to the prompt".to_owned()
        };
        inner
            .record(&task.id, NewEvent::new(EventKind::Log, note))
            .await?;
    }
    Ok(prompt)
}

/// Events read to compose a prompt.
const PROMPT_EVENTS: u32 = 1000;

/// The files the task's stored diff changes (empty when none is stored or it cannot be read).
async fn last_diff_stat(inner: &EngineState, task: &Task) -> Vec<handoff_task::FileStat> {
    let artifacts = match inner.store.artifacts(&task.id).await {
        Ok(artifacts) => artifacts,
        Err(e) => {
            tracing::warn!(task = %task.id, error = %e, "cannot read the last diff");
            return Vec::new();
        }
    };
    let Some(diff) = artifacts
        .into_iter()
        .find(|a| a.kind == handoff_task::ArtifactKind::Diff)
    else {
        return Vec::new();
    };
    tokio::task::spawn_blocking(move || handoff_task::diff_stat_of_body(&diff.body))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default()
}

/// Writes the final state. A task that is paused or waiting for input when its run ends passes
/// through `running` so the state machine stays the single authority.
async fn settle(inner: &Arc<EngineState>, task: &Task, finish: Finish) {
    if finish.requeue && requeue(inner, task).await {
        return;
    }
    for attempt in 0..SETTLE_ATTEMPTS {
        let current = match inner.store.get_task(&task.id).await {
            Ok(Some(current)) => current,
            Ok(None) => break,
            Err(e) => {
                tracing::error!(task = %task.id, error = %e, "could not read task to settle it");
                if !settle_pause(inner, attempt).await {
                    break;
                }
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
            Err(EngineError::Store(handoff_store::StoreError::Fenced { .. })) => {
                tracing::warn!(task = %task.id, "not settled here: another instance holds the task");
                break;
            }
            Err(e) => {
                tracing::error!(task = %task.id, error = %e, "could not settle task");
                if !settle_pause(inner, attempt).await {
                    break;
                }
            }
        }
    }
    if inner.config.tasks.workdir_cleanup == handoff_config::WorkdirCleanup::OnCompletion
        && !task.options.caller_workdir
    {
        inner
            .workdirs
            .remove(std::path::Path::new(&task.workdir), &task.options)
            .await;
    }
}

/// Tries to settle a task at most this often. With [`settle_pause`] the tries span about six
/// minutes, so a task whose final write met a failing store (a full disk) is still settled
/// once writes work again instead of staying `running` until a restart.
const SETTLE_ATTEMPTS: u32 = 64;

/// Waits before the next try to settle: 200 ms more each time, up to 10 s. While the engine
/// shuts down only five short tries are made (false: give up; the next start settles the task).
async fn settle_pause(inner: &EngineState, attempt: u32) -> bool {
    if inner.shutdown.is_cancelled() {
        if attempt >= 4 {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        return true;
    }
    let pause = (Duration::from_millis(200) * (attempt + 1)).min(Duration::from_secs(10));
    tokio::time::sleep(pause).await;
    true
}

/// Puts a task stopped by shutdown back in the queue; false if it was no longer active.
async fn requeue(inner: &EngineState, task: &Task) -> bool {
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
        Ok(Some(queued)) => {
            inner.outbox.status(&queued.id, queued.status);
            true
        }
        Ok(None) => false,
        Err(e) => {
            tracing::error!(task = %task.id, error = %e, "could not re-queue at shutdown");
            false
        }
    }
}
