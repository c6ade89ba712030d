//! Start-up reconciliation: every task a dead server left unfinished gets a truthful state
//! before anything new runs, and nothing executes twice.

use std::{path::PathBuf, sync::Arc};

use handoff_runner::RunSpec;
use handoff_task::{EventKind, NewEvent, TaskStatus, unix_millis_now};

use crate::{EngineError, lifecycle, plan::RunPlan, state::EngineState};

/// Why an unfinished task was failed at start-up.
pub(crate) const INTERRUPTED: &str = "interrupted: server restarted";

/// What an interrupted task's record says: its failure, its re-queueing, the lost run's note.
pub(crate) struct Interruption {
    pub failed: String,
    pub requeued: String,
    pub note: &'static str,
}

impl Interruption {
    /// This server restarted.
    fn restart() -> Self {
        Self {
            failed: INTERRUPTED.to_owned(),
            requeued: "re-queued: server restarted".to_owned(),
            note: "the server stopped while this task was running; its run was lost",
        }
    }
}

/// The tasks start-up recovery answers for: on a store only this instance uses, every active
/// task (the previous process's orphans); on a shared one those nobody holds a lease on (left
/// by releases before leases, or claimed without one) and those of this instance's
/// predecessor on the same data dir (dead: their leases are taken over at once, not left to
/// expire) — other instances' tasks are their own, or the rescuer's once their lease expires.
async fn orphans(inner: &EngineState) -> Result<Vec<handoff_task::Task>, EngineError> {
    let active = inner.store.tasks_in(&TaskStatus::ACTIVE).await?;
    if !inner.store.is_shared() {
        return Ok(active);
    }
    let predecessor = inner.instance.predecessor.as_deref();
    let mut orphans = Vec::new();
    for task in active {
        match task.lease.as_ref().map(|l| l.owner.as_str()) {
            None => orphans.push(task),
            Some(owner) if Some(owner) == predecessor => {
                let grant = inner.instance.lease(inner.config.instance.lease_expiry);
                if let Some(task) = inner
                    .store
                    .take_over(&task.id, owner, i64::MAX, &grant)
                    .await?
                {
                    orphans.push(task);
                }
            }
            Some(_) => {}
        }
    }
    Ok(orphans)
}

pub(crate) async fn reconcile(inner: &Arc<EngineState>) -> Result<(), EngineError> {
    let orphans = orphans(inner).await?;
    let (mut reattached, mut requeued, mut failed) = (0, 0, 0);
    for task in orphans {
        let executor = inner.executors.get(&task.executor);
        if let (Some(executor), Some(state)) = (&executor, &task.runner_state) {
            if executor.capabilities().reattach {
                // Decided once for the re-attached run, as at a claim.
                let plan = Arc::new(RunPlan::new(inner, &task));
                let spec = RunSpec {
                    task_id: task.id.clone(),
                    attempt: task.fence,
                    prompt: task.description.clone(),
                    workdir: PathBuf::from(&task.workdir),
                    preset_rules: Some(plan.preset_rules.clone()),
                    continuable: false,
                    env: Vec::new(),
                    env_hidden: Vec::new(),
                };
                match executor.reattach(spec, state).await {
                    Ok(Some(run)) => {
                        // What the run asked before the restart is still waiting.
                        let asked = inner.store.input_requests(&task.id).await?;
                        let link = inner.supervisors.spawn(
                            inner.shared(),
                            &task,
                            plan.clone(),
                            executor.capabilities(),
                            asked,
                        );
                        inner.runs.spawn(lifecycle::drive(
                            inner.clone(),
                            task,
                            plan,
                            Some(run),
                            link,
                        ));
                        reattached += 1;
                        continue;
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(task = %task.id, error = %e, "re-attach failed"),
                }
            }
            // Whatever is left of the old run must not keep working beside a re-run.
            if let Err(e) = executor.abandon(state).await {
                tracing::warn!(task = %task.id, error = %e, "could not stop the old run");
            }
        }
        let stopped = stop_unrecorded(&task).await;
        // The interrupted run's baseline is of no use: a re-run takes a fresh one.
        inner.snapshots.discard(&task.id).await;
        let requeue = task.options.requeue_on_restart && stopped;
        match account(inner, &task, requeue, &Interruption::restart()).await? {
            Some(TaskStatus::Queued) => requeued += 1,
            Some(_) => failed += 1,
            None => {}
        }
    }
    if reattached + requeued + failed > 0 {
        tracing::info!(
            reattached,
            requeued,
            failed,
            "reconciled tasks left by the previous run"
        );
    }
    Ok(())
}

/// Gives an interrupted task its truthful state: back in the queue when it opted in (and
/// nothing of its old run survived), else failed. Returns the state written, if any.
pub(crate) async fn account(
    inner: &Arc<EngineState>,
    task: &handoff_task::Task,
    requeue: bool,
    why: &Interruption,
) -> Result<Option<TaskStatus>, EngineError> {
    let now = unix_millis_now();
    if task.status.after_restart(requeue) == TaskStatus::Queued {
        let queued = inner
            .store
            .requeue(&task.id, task.status, now, &why.requeued)
            .await?;
        if queued.is_some() {
            inner.wake.notify_one();
        }
        return Ok(queued.map(|queued| {
            inner.outbox.status(&queued.id, queued.status);
            queued.status
        }));
    }
    let lost = NewEvent::new(EventKind::Error, why.note);
    inner.store.append_events(&task.id, now, &[lost]).await?;
    let failed = inner
        .change_status(
            task,
            TaskStatus::Failed,
            why.failed.clone(),
            None,
            Some(why.failed.clone()),
        )
        .await?;
    Ok(failed.map(|task| task.status))
}

/// Kills what is left of the task's runs whether or not their pids were recorded (Handoff may
/// have died between starting a process and saving its pid): by the task's cgroup and the task
/// id every run process carries. `false` when something survived, so the task must not run
/// again beside it.
pub(crate) async fn stop_unrecorded(task: &handoff_task::Task) -> bool {
    match handoff_runner::stop_task_leftovers(task.id.as_str()).await {
        Ok(0) => true,
        Ok(killed) => {
            tracing::info!(task = %task.id, killed, "stopped processes left by the previous run");
            true
        }
        Err(e) => {
            tracing::error!(task = %task.id, error = %e, "the previous run could not be stopped; the task is not re-queued");
            false
        }
    }
}
