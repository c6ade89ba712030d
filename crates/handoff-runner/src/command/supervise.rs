use std::{os::unix::process::ExitStatusExt, process::ExitStatus, sync::Arc, time::Duration};

use handoff_task::ExitInfo;
use tokio::{
    process::Child,
    sync::mpsc,
    task::JoinHandle,
    time::{Instant, timeout_at},
};

use super::{
    control::Shared,
    process::{self, GONE_TIMEOUT},
};
use crate::{RunEvent, RunOutcome};

/// Once the group is gone, only a process that left it (setsid) can still hold a pipe open;
/// its output is not worth holding the task's end for.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// However slowly the output is consumed, the run's end is not held longer than this.
const DRAIN_LIMIT: Duration = Duration::from_secs(120);

/// Waits for the leader, clears out its group, drains the pipes and sends
/// [`RunEvent::Finished`].
pub(super) async fn supervise(
    mut child: Child,
    shared: Arc<Shared>,
    readers: Vec<JoinHandle<()>>,
    tx: mpsc::Sender<RunEvent>,
) {
    let pgid = shared.pgid();
    let unreaped = process::leader_exit_unreaped(pgid).await;
    if unreaped {
        shared.leader_exited();
    }
    let status = child.wait().await;
    if !unreaped {
        // The leader's pid is free again now, but members left behind still hold the group id.
        shared.leader_exited();
    }
    if !process::wait_group_gone(pgid, GONE_TIMEOUT).await {
        tracing::warn!(pgid, "process group still running after SIGKILL");
    }
    // Processes that left the group (setsid, a sandbox's own session) are still in the cgroup.
    shared.confinement.kill().await;
    let limit_reached = shared.confinement.limit_reached().await;
    let killed_at_limit = shared.confinement.killed_at_limit().await;
    shared.confinement.remove().await;
    shared.gone().await;

    let limit = Instant::now() + DRAIN_LIMIT;
    for mut reader in readers {
        loop {
            match timeout_at((Instant::now() + DRAIN_TIMEOUT).min(limit), &mut reader).await {
                Ok(_) => break,
                // Lines still queued: the reader waits for the consumer, not on an open pipe.
                Err(_) if tx.capacity() < tx.max_capacity() && Instant::now() < limit => {}
                Err(_) => {
                    tracing::warn!(pgid, "output pipe still open after the process group ended");
                    reader.abort();
                    break;
                }
            }
        }
    }

    let outcome = match status {
        Ok(status) => {
            let mut outcome = outcome(status, shared.cancelled());
            if let Some(reason) = limit_reached.filter(|_| !outcome.success) {
                outcome.error = Some(reason);
            }
            outcome.limit_reached = killed_at_limit;
            outcome
        }
        Err(e) => RunOutcome {
            success: false,
            exit: None,
            error: Some(format!("could not wait for the process: {e}")),
            limit_reached: killed_at_limit,
            ..RunOutcome::default()
        },
    };
    let _ = tx.send(RunEvent::Finished(outcome)).await;
}

fn outcome(status: ExitStatus, cancelled: bool) -> RunOutcome {
    let exit = ExitInfo {
        code: status.code(),
        signal: status.signal(),
    };
    let error = if cancelled {
        Some("cancelled".to_owned())
    } else {
        match (exit.code, exit.signal) {
            (Some(0), _) => None,
            (Some(code), _) => Some(format!("exit code {code}")),
            (None, Some(signal)) => Some(format!("killed by signal {signal}")),
            (None, None) => Some("ended without an exit code".to_owned()),
        }
    };
    RunOutcome {
        success: error.is_none(),
        exit: Some(exit),
        error,
        ..RunOutcome::default()
    }
}
