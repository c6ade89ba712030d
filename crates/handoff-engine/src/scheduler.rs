use std::{sync::Arc, time::Duration};

use handoff_runner::Capabilities;
use handoff_store::ClaimLimits;
use handoff_task::unix_millis_now;

use crate::{
    engine::{Inner, LiveRun},
    run,
};

/// How often the queue is looked at without a wake-up (another instance may have freed a slot).
const POLL: Duration = Duration::from_secs(1);

/// Claims queued tasks while slots are free and starts a supervised run for each.
pub(crate) async fn run(inner: Arc<Inner>) {
    let limits = ClaimLimits {
        max_active: inner.config.tasks.max_concurrent,
        max_active_per_agent: inner.config.tasks.max_concurrent_per_agent,
    };
    loop {
        while !inner.shutdown.is_cancelled() {
            match inner.store.claim_next(limits, unix_millis_now()).await {
                Ok(Some(task)) => {
                    let _ = inner.changes.send((task.id.clone(), task.status));
                    inner.live().insert(
                        task.id.clone(),
                        LiveRun {
                            control: None,
                            capabilities: Capabilities::default(),
                            stop: None,
                            pending: Vec::new(),
                        },
                    );
                    inner.runs.spawn(run::drive(inner.clone(), task, None));
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
