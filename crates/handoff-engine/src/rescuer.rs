//! The rescuer: takes over the tasks of instances that stopped renewing their leases. One
//! instance at a time does it (the store's rescuer duty, a term as long as a lease, renewed
//! at every pass); the others stand by and take over the duty when its holder's term runs out
//! — dead or cut off from the database alike.
//!
//! It judges its peers only by time during which it reached the store itself: after an outage
//! of the database every heartbeat is as old as its own, and the peers get a whole lease
//! expiry (plus the clock-skew allowance) of reachable time to renew before anyone is
//! declared lost. A task is taken over only once its lease ran out `clock_skew` ago, by a
//! compare-and-set that still finds it expired, so an owner whose late renewal landed first
//! keeps it (see [`crate::fence`] for why the two runs never overlap). Then the task gets
//! today's restart rules, never a silent re-run: a cancel still waiting for its lost holder
//! is honoured (`cancelled`); else `failed` with `interrupted: instance <id> lost`, or back in
//! the queue when it opted in and nothing of its old run survives on this machine. The
//! takeover increments the fencing token, so the lost instance's late writes are refused.
//!
//! In memory only: the tasks taken over whose state is not written yet (retried each pass).

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use handoff_task::{Task, TaskId, TaskStatus, unix_millis_now};

use crate::{
    EngineError,
    instance::millis,
    peers::{answer_rescued, take_rescued},
    recovery::{Interruption, account, stop_unrecorded},
    state::EngineState,
};

/// Looks for expired leases every heartbeat interval until shutdown.
pub(crate) async fn run(inner: Arc<EngineState>) {
    let every = inner.config.instance.heartbeat;
    let mut unsettled = HashMap::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = inner.shutdown.cancelled() => return,
        }
        if let Err(e) = pass(&inner, &mut unsettled).await {
            tracing::error!(error = %e, "the rescuer's pass failed");
        }
    }
}

/// One pass, if this instance holds the duty: declares silent instances lost and takes over
/// every task whose lease expired; `unsettled` are the tasks taken over whose state could not
/// be written yet (by id, with the instance they were taken from). Returns how many tasks
/// it took over.
pub(crate) async fn pass(
    inner: &Arc<EngineState>,
    unsettled: &mut HashMap<TaskId, String>,
) -> Result<usize, EngineError> {
    let now = unix_millis_now();
    let expiry = millis(inner.config.instance.lease_expiry);
    let skew = millis(inner.config.instance.clock_skew);
    let me = inner.instance.id();
    if !inner
        .store
        .rescuer_lock(&me, now, now.saturating_add(expiry))
        .await?
    {
        return Ok(0);
    }
    settle_unsettled(inner, unsettled).await;
    // Silence counts only from when this instance itself reached the store.
    let silent_since = now.saturating_sub(expiry).saturating_sub(skew);
    if inner
        .instance
        .clock
        .reachable_since()
        .is_none_or(|since| since > silent_since)
    {
        return Ok(0);
    }
    let lost: HashMap<String, String> = inner
        .store
        .expire_instances(silent_since, &me)
        .await?
        .into_iter()
        .map(|i| (i.id, i.host))
        .collect();
    for (id, host) in &lost {
        tracing::warn!(instance = %id, host = %host, "instance lost: no heartbeat within the lease expiry");
    }
    let expired_before = now.saturating_sub(skew);
    let expired: Vec<Task> = inner
        .store
        .tasks_in(&TaskStatus::ACTIVE)
        .await?
        .into_iter()
        .filter(|t| {
            t.lease
                .as_ref()
                .is_some_and(|l| l.until < expired_before && *l.owner != *me)
        })
        .collect();
    let mut rescued = 0;
    for task in expired {
        match rescue(inner, &task, &lost, expired_before).await {
            Ok(Some(outcome)) => {
                rescued += 1;
                if let Err(owner) = outcome {
                    unsettled.insert(task.id.clone(), owner);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::error!(task = %task.id, error = %e, "could not take the task over"),
        }
    }
    Ok(rescued)
}

/// Takes over one task whose lease expired before `expired_before`: `None` when its owner
/// renewed it (or another instance took it) first; else whether its state was written, or
/// the instance it was taken from when it is still to be written.
async fn rescue(
    inner: &Arc<EngineState>,
    task: &Task,
    lost: &HashMap<String, String>,
    expired_before: i64,
) -> Result<Option<Result<(), String>>, EngineError> {
    let owner = task.lease.as_ref().map_or("?", |l| l.owner.as_str());
    // Said before the slow parts (killing the run, the compare-and-set): a takeover that
    // waits shows where.
    tracing::info!(task = %task.id, instance = %owner, "taking over a task whose lease expired");
    let grant = inner.instance.lease(inner.config.instance.lease_expiry);
    let Some(taken) = inner
        .store
        .take_over(&task.id, owner, expired_before, &grant)
        .await?
    else {
        tracing::info!(task = %task.id, instance = %owner, "not taken over: its owner renewed the lease first");
        return Ok(None);
    };
    // Recorded pids mean something only on the machine that ran the task.
    let same_host = lost.get(owner).is_some_and(|h| *h == inner.instance.host);
    if same_host
        && let (Some(executor), Some(state)) =
            (inner.executors.get(&task.executor), &task.runner_state)
        && let Err(e) = executor.abandon(state).await
    {
        tracing::warn!(task = %task.id, error = %e, "could not stop the lost run");
    }
    Ok(Some(match decide(inner, &taken, owner).await {
        Ok(()) => Ok(()),
        Err(e) => {
            tracing::warn!(task = %task.id, error = %e, "took the task over; its state is written at the next pass");
            Err(owner.to_owned())
        }
    }))
}

/// Writes the state of a task taken over from `owner`: cancelled when a cancel waits for it,
/// else the restart rules.
async fn decide(inner: &Arc<EngineState>, task: &Task, owner: &str) -> Result<(), EngineError> {
    // Kills what is left of the run on this machine (none when it ran on another one).
    let stopped = stop_unrecorded(task).await;
    let rescued = take_rescued(inner, &task.id).await?;
    let outcome = if let Some(reason) = &rescued.cancel {
        let error = format!("cancelled: {reason}");
        inner
            .change_status(
                task,
                TaskStatus::Cancelled,
                error.clone(),
                None,
                Some(error),
            )
            .await?
            .map(|t| t.status)
    } else {
        let why = Interruption {
            failed: format!("interrupted: instance {owner} lost"),
            requeued: format!("re-queued: instance {owner} lost"),
            note: "the instance running this task stopped renewing its lease; its run was lost",
        };
        let requeue = task.options.requeue_on_restart && stopped;
        account(inner, task, requeue, &why).await?
    };
    answer_rescued(inner, &rescued, outcome == Some(TaskStatus::Cancelled)).await;
    if let Some(status) = outcome {
        tracing::info!(task = %task.id, instance = %owner, status = %status, "took over a lost instance's task");
    }
    Ok(())
}

/// Retries writing the state of the tasks taken over at an earlier pass.
async fn settle_unsettled(inner: &Arc<EngineState>, unsettled: &mut HashMap<TaskId, String>) {
    let mut done = HashSet::new();
    for (id, owner) in unsettled.iter() {
        let task = match inner.store.get_task(id).await {
            Ok(Some(task)) => task,
            Ok(None) => {
                done.insert(id.clone());
                continue;
            }
            Err(_) => continue,
        };
        let mine = task
            .lease
            .as_ref()
            .is_some_and(|l| *l.owner == *inner.instance.id());
        if !task.status.is_active() || !mine || inner.supervisors.supervises(id) {
            done.insert(id.clone());
            continue;
        }
        if decide(inner, &task, owner).await.is_ok() {
            done.insert(id.clone());
        }
    }
    unsettled.retain(|id, _| !done.contains(id));
}
