//! The rescuer: takes over the tasks of instances that stopped renewing their leases. One
//! instance at a time does it (the store's rescuer duty, a term as long as a lease, renewed
//! at every pass); the others stand by and take over the duty when its holder's term runs out
//! — dead or cut off from the database alike. A rescued task gets today's restart rules, never a silent
//! re-run: `failed` with `interrupted: instance <id> lost`, or back in the queue when it opted
//! in and nothing of its old run survives on this machine. Every takeover is a
//! compare-and-set that clears the owner (and a re-queue increments the fencing token), so the
//! lost instance's late writes are refused if it comes back.

use std::{collections::HashMap, sync::Arc, time::Duration};

use handoff_task::{Task, TaskStatus, unix_millis_now};

use crate::{
    EngineError,
    recovery::{Interruption, account, stop_unrecorded},
    state::EngineState,
};

/// Looks for expired leases every heartbeat interval until shutdown.
pub(crate) async fn run(inner: Arc<EngineState>) {
    let every = inner.config.instance.heartbeat;
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = inner.shutdown.cancelled() => return,
        }
        if let Err(e) = pass(&inner).await {
            tracing::error!(error = %e, "the rescuer's pass failed");
        }
    }
}

/// One pass, if this instance holds the duty: declares silent instances lost and takes over
/// every task whose lease expired. Returns how many tasks it took over.
pub(crate) async fn pass(inner: &Arc<EngineState>) -> Result<usize, EngineError> {
    let now = unix_millis_now();
    let expiry = millis(inner.config.instance.lease_expiry);
    let term = now.saturating_add(expiry);
    if !inner
        .store
        .rescuer_lock(&inner.instance.id, now, term)
        .await?
    {
        return Ok(0);
    }
    let lost: HashMap<String, String> = inner
        .store
        .expire_instances(now.saturating_sub(expiry), &inner.instance.id)
        .await?
        .into_iter()
        .map(|i| (i.id, i.host))
        .collect();
    for (id, host) in &lost {
        tracing::warn!(instance = %id, host = %host, "instance lost: no heartbeat within the lease expiry");
    }
    let expired: Vec<Task> = inner
        .store
        .tasks_in(&TaskStatus::ACTIVE)
        .await?
        .into_iter()
        .filter(|t| {
            t.lease
                .as_ref()
                .is_some_and(|l| l.until < now && l.owner != inner.instance.id)
        })
        .collect();
    let mut rescued = 0;
    for task in expired {
        match rescue(inner, &task, &lost).await {
            Ok(true) => rescued += 1,
            Ok(false) => {}
            Err(e) => tracing::error!(task = %task.id, error = %e, "could not take the task over"),
        }
    }
    Ok(rescued)
}

/// Takes over one task whose lease expired.
async fn rescue(
    inner: &Arc<EngineState>,
    task: &Task,
    lost: &HashMap<String, String>,
) -> Result<bool, EngineError> {
    let owner = task.lease.as_ref().map_or("?", |l| l.owner.as_str());
    // Said before the slow parts (killing the run, the compare-and-set): a takeover that
    // waits shows where.
    tracing::info!(task = %task.id, instance = %owner, "taking over a task whose lease expired");
    // Recorded pids mean something only on the machine that ran the task.
    let same_host = lost.get(owner).is_some_and(|h| *h == inner.instance.host);
    if same_host
        && let (Some(executor), Some(state)) =
            (inner.executors.get(&task.executor), &task.runner_state)
        && let Err(e) = executor.abandon(state).await
    {
        tracing::warn!(task = %task.id, error = %e, "could not stop the lost run");
    }
    // Kills what is left of the run on this machine (none when it ran on another one).
    let stopped = stop_unrecorded(task).await;
    let why = Interruption {
        failed: format!("interrupted: instance {owner} lost"),
        requeued: format!("re-queued: instance {owner} lost"),
        note: "the instance running this task stopped renewing its lease; its run was lost",
    };
    let requeue = task.options.requeue_on_restart && stopped;
    let outcome = account(inner, task, requeue, &why).await?;
    if let Some(status) = outcome {
        tracing::info!(task = %task.id, instance = %owner, status = %status, "took over a lost instance's task");
    }
    Ok(outcome.is_some())
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
