//! What every part of one engine shares — settings, the store, executors, the outbox — and
//! the few writes every part makes the same way: append an event, move a task between states,
//! wait for a task to settle. Each write goes to the store first and is then published through
//! the outbox. Supervisors hold this, not the engine state, so they cannot reach each other.

use std::{path::PathBuf, sync::Arc, time::Duration};

use handoff_config::Config;
use handoff_protocol::TaskNotice;
use handoff_runner::ExecutorRegistry;
use handoff_store::{StatusChange, Store};
use handoff_task::{ExitInfo, NewEvent, Task, TaskId, TaskStatus, unix_millis_now};
use tokio::sync::Notify;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

/// How often a wait for a task to settle re-reads it without a notice.
const REREAD: Duration = Duration::from_secs(1);

use crate::{
    EngineError, EngineMetrics,
    metrics::OutcomeLabels,
    outbox::{Missed, Outbox},
    rate::KeyedRate,
    snapshot::Snapshots,
    workdir::Workdirs,
};

/// What every part of one engine shares. Durable facts live in the store; this holds only
/// handles and settings.
pub(crate) struct Shared {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub executors: ExecutorRegistry,
    pub metrics: EngineMetrics,
    pub workdirs: Workdirs,
    pub rate: KeyedRate,
    pub artifacts_dir: PathBuf,
    /// Baselines the task diffs are computed against.
    pub snapshots: Snapshots,
    /// Wakes the scheduler: a task was queued or a slot freed.
    pub wake: Notify,
    /// Every event and state change, to subscribers and integrations.
    pub outbox: Outbox,
    pub shutdown: CancellationToken,
    pub runs: TaskTracker,
    /// This process as an instance in the store (the owner of the leases it claims).
    pub instance: crate::instance::Instance,
    /// Rules, hooks and loop guard for executors' tool calls.
    pub policy: crate::policy::TaskPolicy,
    /// The completion judge, when an evaluator model is configured.
    pub judge: Option<handoff_llm::LlmClient>,
    /// Callers waiting in their submitting call for a task's final result.
    pub result_waits: crate::result_waits::ResultWaits,
    /// The keeper process that freezes this instance's runs when their leases lapse while the
    /// server itself cannot act (a shared store only).
    pub run_fence: std::sync::OnceLock<Arc<handoff_runner::fence::RunFence>>,
}

impl Shared {
    /// Appends one event to the task's history; its number.
    pub(crate) async fn record(&self, id: &TaskId, event: NewEvent) -> Result<i64, EngineError> {
        let seqs = self
            .store
            .append_events(id, unix_millis_now(), &[event])
            .await?;
        self.outbox.events(id);
        seqs.first()
            .copied()
            .ok_or_else(|| EngineError::Internal("the store numbered no event".to_owned()))
    }

    /// Moves `task` to `to` if the state machine allows it and nobody changed it meanwhile.
    pub(crate) async fn change_status(
        &self,
        task: &Task,
        to: TaskStatus,
        reason: impl Into<String>,
        exit: Option<ExitInfo>,
        error: Option<String>,
    ) -> Result<Option<Task>, EngineError> {
        task.status
            .transition(to)
            .map_err(|e| EngineError::Conflict(e.to_string()))?;
        let change = StatusChange {
            from: task.status,
            to,
            at: unix_millis_now(),
            exit,
            error,
            reason: reason.into(),
        };
        let updated = self.store.set_status(&task.id, &change).await?;
        if let Some(updated) = &updated {
            self.outbox.status(&updated.id, updated.status);
            if to.is_terminal() {
                if let Some(ms) = updated.duration_ms(change.at) {
                    self.metrics
                        .durations
                        .get_or_create(&OutcomeLabels {
                            executor: updated.executor.clone(),
                            outcome: to.as_str(),
                        })
                        .observe(ms as f64 / 1000.0);
                }
                self.wake.notify_one();
            }
        }
        Ok(updated)
    }

    /// Waits until task `id` is terminal, or `limit` passes; returns its latest state.
    pub(crate) async fn wait_settled(
        &self,
        id: &TaskId,
        limit: Duration,
    ) -> Result<Task, EngineError> {
        let mut notices = self.outbox.subscribe_task(id);
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let task = self
                .store
                .get_task(id)
                .await?
                .ok_or_else(|| EngineError::NotFound(id.to_string()))?;
            if task.status.is_terminal() {
                return Ok(task);
            }
            // Wake on this task's next state change, on lag (re-read), or at the deadline; and
            // re-read now and then, since a notice from another instance may be dropped.
            let reread = (tokio::time::Instant::now() + REREAD).min(deadline);
            loop {
                match tokio::time::timeout_at(reread, notices.next()).await {
                    Ok(Err(Missed::Closed)) => return Ok(task),
                    Err(_) if reread >= deadline => return Ok(task),
                    Err(_) | Ok(Ok(TaskNotice::Status(..)) | Err(Missed::Lagged)) => break,
                    Ok(Ok(TaskNotice::Events(_))) => {}
                }
            }
        }
    }
}
