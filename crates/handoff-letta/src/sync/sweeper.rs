//! The sweeper: detaches finished tasks' blocks and deletes detached ones when their stored
//! times come due, and (re)starts writers for records with work left — at start-up that is
//! everything an earlier process did not finish. Of several instances sharing the store, only
//! the one the source names writes about a task.

use std::{sync::Arc, time::Duration};

use handoff_task::{BlockPhase, WorkspaceRecord, unix_millis_now};

use super::{Shared, millis};
use crate::LettaError;

/// Records handled per pass.
const BATCH: u32 = 500;

/// Runs until the integration stops.
pub(crate) async fn run(shared: Arc<Shared>) {
    loop {
        let now = unix_millis_now();
        match shared.store.workspaces_due(now, BATCH).await {
            Ok(due) => {
                for record in due {
                    if shared.stop.is_cancelled() {
                        return;
                    }
                    handle(&shared, record, now).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the Letta records"),
        }
        let next = match shared.store.next_workspace_due().await {
            Ok(Some(at)) => {
                Duration::from_millis(u64::try_from(at - unix_millis_now()).unwrap_or(0))
            }
            _ => shared.config.sweep_interval,
        };
        // Never spin: at least 100 ms between passes.
        let wait = next
            .min(shared.config.sweep_interval)
            .max(Duration::from_millis(100));
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = shared.sweep.notified() => {}
            () = shared.stop.cancelled() => return,
        }
    }
}

async fn handle(shared: &Arc<Shared>, mut record: WorkspaceRecord, now: i64) {
    // Another instance sharing the store writes about this task (it runs it, or ran it).
    match shared.source.writes_here(&record.task_id).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            tracing::debug!(task = %record.task_id, error = %e, "cannot tell who writes to Letta");
            return;
        }
    }
    let due = |at: Option<i64>| at.is_some_and(|at| at <= now);
    let result = match record.phase {
        BlockPhase::Creating | BlockPhase::Attached => {
            shared.ensure_writer(&record.task_id);
            return;
        }
        BlockPhase::Final if due(record.detach_at) => detach(shared, &mut record, now).await,
        BlockPhase::Detached if due(record.delete_at) => delete(shared, &mut record).await,
        _ if record.notify.is_owed() => {
            shared.ensure_writer(&record.task_id);
            return;
        }
        _ => return,
    };
    match result {
        Ok(()) => record.last_error = None,
        Err(LettaError::Stopped { .. }) => return,
        Err(e) => {
            tracing::debug!(task = %record.task_id, error = %e, "Letta cleanup failed; retrying later");
            record.last_error = Some(e.to_string());
        }
    }
    if let Err(e) = shared.save(&mut record).await {
        tracing::warn!(task = %record.task_id, error = %e, "cannot save the Letta record");
    }
}

async fn detach(shared: &Shared, record: &mut WorkspaceRecord, now: i64) -> Result<(), LettaError> {
    if let Some(block) = &record.block_id {
        match shared
            .client
            .detach_block(record.agent_id.as_str(), block)
            .await
        {
            // Gone already (detached by hand, or the agent was deleted): nothing to detach.
            Ok(()) | Err(LettaError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    record.phase = BlockPhase::Detached;
    record.delete_at = Some(now.saturating_add(millis(shared.config.block_retention)));
    Ok(())
}

async fn delete(shared: &Shared, record: &mut WorkspaceRecord) -> Result<(), LettaError> {
    if let Some(block) = &record.block_id {
        match shared.client.delete_block(block).await {
            Ok(()) | Err(LettaError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    record.phase = BlockPhase::Deleted;
    Ok(())
}
