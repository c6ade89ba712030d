//! The scheduler: claims queued tasks while slots are free and hands each to a new
//! supervisor and run driver. On a shared store an instance claims its share of the queue (the
//! queued tasks divided among the live instances, every one woken by the same notice) and then
//! lets the others claim theirs before it looks again, so a batch spreads over the instances
//! instead of going to whichever woke first.

use std::{sync::Arc, time::Duration};

use handoff_runner::Capabilities;
use handoff_store::ClaimLimits;
use handoff_task::{TaskStatus, unix_millis_now};

use crate::{finish::StopReason, lifecycle, plan::RunPlan, state::EngineState};

/// How often the queue is looked at without a wake-up (another instance may have freed a slot).
const POLL: Duration = Duration::from_secs(1);
/// How long an instance that claimed its share waits before it claims what the others left.
const SHARE_PAUSE: Duration = Duration::from_millis(50);

/// Claims queued tasks while slots are free and starts a supervised run for each.
pub(crate) async fn run(inner: Arc<EngineState>) {
    let limits = ClaimLimits {
        max_active: inner.config.tasks.max_concurrent,
        max_active_per_agent: inner.config.tasks.max_concurrent_per_agent,
    };
    let mut claims_failing = false;
    loop {
        let mut share = share(&inner).await;
        let mut shared_out = false;
        loop {
            // Counted as a run from before the shutdown check until the claimed task's run is
            // tracked, so a shutdown meanwhile waits for it.
            let _claiming = inner.runs.token();
            if inner.shutdown.is_cancelled() {
                break;
            }
            if share == 0 {
                shared_out = true;
                break;
            }
            share -= 1;
            let lease = inner.instance.lease(inner.config.instance.lease_expiry);
            match inner
                .store
                .claim(limits, unix_millis_now(), Some(&lease))
                .await
            {
                Ok(Some(task)) => {
                    claims_failing = false;
                    inner.outbox.status(&task.id, task.status);
                    // Decided once for the run: its driver and its supervisor read this plan.
                    let plan = Arc::new(RunPlan::new(&inner, &task));
                    let link = inner.supervisors.spawn(
                        inner.shared(),
                        &task,
                        plan.clone(),
                        Capabilities::default(),
                        Vec::new(),
                    );
                    if inner.shutdown.is_cancelled() {
                        // The shutdown may have told the supervisors to stop before this one.
                        link.stop(StopReason::Shutdown).await;
                    }
                    inner
                        .runs
                        .spawn(lifecycle::drive(inner.clone(), task, plan, None, link));
                }
                Ok(None) => {
                    claims_failing = false;
                    break;
                }
                Err(e) => {
                    // Once per stretch of failures: an outage must not log every second.
                    if !claims_failing {
                        tracing::error!(error = %e, "could not claim a queued task");
                    }
                    claims_failing = true;
                    break;
                }
            }
        }
        let pause = if shared_out { SHARE_PAUSE } else { POLL };
        tokio::select! {
            () = inner.wake.notified() => {}
            () = tokio::time::sleep(pause) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}

/// How many tasks this instance claims before the others get their turn: unbounded while it
/// is the only live instance, else its share of the queue among the live ones (at least one;
/// the count of live instances is the heartbeat's).
async fn share(inner: &EngineState) -> usize {
    let live = inner
        .instance
        .live
        .load(std::sync::atomic::Ordering::Relaxed);
    if !inner.store.is_shared() || live <= 1 {
        return usize::MAX;
    }
    let queued = inner
        .store
        .count_by_status()
        .await
        .ok()
        .and_then(|c| c.into_iter().find(|(s, _)| *s == TaskStatus::Queued))
        .map_or(0, |(_, n)| usize::try_from(n).unwrap_or(usize::MAX));
    queued.div_ceil(live).max(1)
}
