//! Deletes finished tasks (rows, spilled artifacts, Handoff-created directories) after the
//! retention period.

use std::{path::Path, sync::Arc, time::Duration};

use handoff_task::unix_millis_now;

use crate::state::EngineState;

const SWEEP_EVERY: Duration = Duration::from_secs(3600);
const BATCH: u32 = 500;

pub(crate) async fn run(inner: Arc<EngineState>) {
    loop {
        match sweep(&inner).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(purged = n, "purged finished tasks past retention"),
            Err(e) => tracing::warn!(error = %e, "retention sweep failed"),
        }
        tokio::select! {
            () = tokio::time::sleep(SWEEP_EVERY) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}

/// One sweep; returns how many tasks were purged.
pub(crate) async fn sweep(inner: &EngineState) -> Result<usize, crate::EngineError> {
    let retention = i64::try_from(inner.config.tasks.retention.as_millis()).unwrap_or(i64::MAX);
    let before = unix_millis_now().saturating_sub(retention);
    let mut total = 0;
    loop {
        let purged = inner.store.purge_terminal(before, BATCH).await?;
        for task in &purged {
            if !task.options.caller_workdir {
                inner
                    .workdirs
                    .remove(Path::new(&task.workdir), &task.options)
                    .await;
            }
            // Settling discards the baseline; one left by a crash goes with its task.
            inner.snapshots.discard(&task.id).await;
            let spilled = inner.artifacts_dir.join(task.id.as_str());
            if let Err(e) = tokio::fs::remove_dir_all(&spilled).await
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(dir = %spilled.display(), error = %e, "could not remove artifacts");
            }
        }
        total += purged.len();
        if purged.len() < BATCH as usize {
            return Ok(total);
        }
    }
}
