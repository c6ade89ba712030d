//! The scheduler: claims queued tasks while slots are free and hands each to a new
//! supervisor and run driver.

use std::{sync::Arc, time::Duration};

use handoff_runner::Capabilities;
use handoff_store::ClaimLimits;
use handoff_task::unix_millis_now;

use crate::{finish::StopReason, lifecycle, state::EngineState};

/// How often the queue is looked at without a wake-up (another instance may have freed a slot).
const POLL: Duration = Duration::from_secs(1);

/// Claims queued tasks while slots are free and starts a supervised run for each.
pub(crate) async fn run(inner: Arc<EngineState>) {
    let limits = ClaimLimits {
        max_active: inner.config.tasks.max_concurrent,
        max_active_per_agent: inner.config.tasks.max_concurrent_per_agent,
    };
    loop {
        loop {
            // Counted as a run from before the shutdown check until the claimed task's run is
            // tracked, so a shutdown meanwhile waits for it.
            let _claiming = inner.runs.token();
            if inner.shutdown.is_cancelled() {
                break;
            }
            let lease = inner.instance.lease(inner.config.instance.lease_expiry);
            match inner
                .store
                .claim(limits, unix_millis_now(), Some(&lease))
                .await
            {
                Ok(Some(task)) => {
                    inner.outbox.status(&task.id, task.status);
                    let link = inner.supervisors.spawn(
                        inner.shared(),
                        &task,
                        Capabilities::default(),
                        Vec::new(),
                    );
                    if inner.shutdown.is_cancelled() {
                        // The shutdown may have told the supervisors to stop before this one.
                        link.stop(StopReason::Shutdown).await;
                    }
                    inner
                        .runs
                        .spawn(lifecycle::drive(inner.clone(), task, None, link));
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(error = %e, "could not claim a queued task");
                    break;
                }
            }
        }
        tokio::select! {
            () = inner.wake.notified() => {}
            () = tokio::time::sleep(POLL) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}
