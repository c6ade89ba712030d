use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use handoff_config::Config;
use handoff_runner::{Capabilities, ExecutorRegistry, RunControl};
use handoff_store::{StatusChange, Store};
use handoff_task::{ExitInfo, NewEvent, Task, TaskId, TaskStatus, unix_millis_now};
use tokio::sync::{Notify, broadcast};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    EngineError, EngineMetrics, metrics::OutcomeLabels, rate::SubmissionRate, recovery, retention,
    scheduler, snapshot::Snapshots, workdir::Workdirs,
};

/// Why a run is being stopped by Handoff rather than ending on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// A `cancel` control.
    Cancelled(String),
    /// The deadline passed.
    Timeout,
    /// The server is shutting down.
    Shutdown,
    /// The loop guard saw the executor repeat itself, or a hook asked to stop.
    Stuck(String),
}

/// What the engine knows about a run in this process.
pub(crate) struct LiveRun {
    /// Set once the executor has started.
    pub control: Option<Arc<dyn RunControl>>,
    /// What the executor supports.
    pub capabilities: Capabilities,
    /// Set when Handoff decided to stop the run.
    pub stop: Option<StopReason>,
    /// Requests waiting for the owner's answer, oldest first.
    pub pending: Vec<handoff_runner::InputRequest>,
}

/// Shared engine state.
pub(crate) struct Inner {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub executors: ExecutorRegistry,
    pub metrics: EngineMetrics,
    pub workdirs: Workdirs,
    pub rate: SubmissionRate,
    pub artifacts_dir: PathBuf,
    /// Baselines the task diffs are computed against.
    pub snapshots: Snapshots,
    live: Mutex<HashMap<TaskId, LiveRun>>,
    /// Wakes the scheduler: a task was queued or a slot freed.
    pub wake: Notify,
    /// Every state change, for waiters (sync execute, cancel).
    pub changes: broadcast::Sender<(TaskId, TaskStatus)>,
    pub shutdown: CancellationToken,
    pub runs: TaskTracker,
    /// Rules, hooks and loop guard for executors' tool calls.
    pub policy: crate::policy::TaskPolicy,
    /// The completion judge, when an evaluator model is configured.
    pub judge: Option<handoff_llm::LlmClient>,
    /// The Letta integration, when a Letta server is configured.
    pub letta: std::sync::OnceLock<handoff_letta::WorkspaceSync>,
}

/// The task engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("executors", &self.inner.executors)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Reconciles the store with reality (tasks left running by a dead server), then starts the
    /// scheduler and the retention sweeper.
    pub async fn start(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        executors: ExecutorRegistry,
        metrics: EngineMetrics,
    ) -> Result<Self, EngineError> {
        let workdirs = Workdirs::new(
            &config.workspace_dir,
            &config.tasks.workdir_roots,
            config.tasks.git_repository.as_deref(),
        )?;
        let artifacts_dir = std::path::absolute(config.data_dir.join("artifacts"))
            .map_err(|e| EngineError::io("data dir", e))?;
        let rate = SubmissionRate::new(
            config.tasks.submissions_per_minute,
            config.tasks.submission_burst,
        );
        let (changes, _) = broadcast::channel(1024);
        let policy = crate::policy::TaskPolicy::new(&config);
        let judge = match config.evaluator.llm() {
            Some(llm) => Some(
                handoff_llm::LlmClient::from_config(llm)
                    .map_err(|e| EngineError::invalid("evaluator", e.to_string()))?,
            ),
            None => None,
        };
        let inner = Arc::new(Inner {
            policy,
            judge,
            config,
            store,
            executors,
            metrics,
            workdirs,
            rate,
            snapshots: Snapshots::new(artifacts_dir.with_file_name("snapshots")),
            artifacts_dir,
            live: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            changes,
            shutdown: CancellationToken::new(),
            runs: TaskTracker::new(),
            letta: std::sync::OnceLock::new(),
        });
        crate::letta::start(&inner)?;
        recovery::reconcile(&inner).await?;
        tokio::spawn(scheduler::run(inner.clone()));
        tokio::spawn(retention::run(inner.clone()));
        Ok(Self { inner })
    }

    /// Every task state change from now on, for followers (the MCP elicitation relay).
    pub fn changes(&self) -> broadcast::Receiver<(TaskId, TaskStatus)> {
        self.inner.changes.subscribe()
    }

    /// Stops taking new work and stops the runs in flight (politely, then by force): they end
    /// `failed` ("interrupted: server shut down"), or back in the queue if they opted in to
    /// re-running. Returns once every run has settled or the grace period (plus slack) passed.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        let controls: Vec<_> = self
            .inner
            .live()
            .values_mut()
            .filter_map(|run| {
                run.stop.get_or_insert(StopReason::Shutdown);
                run.control.clone()
            })
            .collect();
        let grace = self.inner.config.tasks.cancel_grace;
        let stops = controls.into_iter().map(|control| async move {
            if let Err(e) = control.cancel(grace).await {
                tracing::warn!(error = %e, "stopping a run at shutdown failed");
            }
        });
        futures::future::join_all(stops).await;
        self.inner.runs.close();
        if tokio::time::timeout(grace + Duration::from_secs(5), self.inner.runs.wait())
            .await
            .is_err()
        {
            tracing::warn!("some runs did not settle before shutdown");
        }
        // After the runs: their final states reach the store first, and the next start
        // resumes whatever Letta writes are left.
        if let Some(letta) = self.inner.letta.get() {
            letta.shutdown().await;
        }
    }

    /// Purges finished tasks past retention now (the sweeper also runs hourly); returns how
    /// many were purged.
    pub async fn purge_expired(&self) -> Result<usize, EngineError> {
        retention::sweep(&self.inner).await
    }

    /// Resolves once [`Engine::shutdown`] was called.
    pub async fn stopped(&self) {
        self.inner.shutdown.cancelled().await;
    }

    /// The Letta integration, when a Letta server is configured.
    pub fn letta(&self) -> Option<&handoff_letta::WorkspaceSync> {
        self.inner.letta.get()
    }

    /// Executor names this engine offers.
    pub fn executor_names(&self) -> Vec<String> {
        self.inner.executors.names()
    }

    /// Tasks per state, for health and metrics; also refreshes the state gauges.
    pub async fn counts(&self) -> Result<Vec<(TaskStatus, u64)>, EngineError> {
        let counts = self.inner.store.count_by_status().await?;
        for status in TaskStatus::ALL {
            let n = counts
                .iter()
                .find(|(s, _)| *s == status)
                .map_or(0, |(_, n)| *n);
            let gauge = self
                .inner
                .metrics
                .tasks
                .get_or_create(&crate::metrics::StateLabels {
                    state: status.as_str(),
                });
            gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
            if status == TaskStatus::Queued {
                self.inner
                    .metrics
                    .queue_depth
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
        Ok(counts)
    }
}

impl Inner {
    /// The live-run table; a poisoned lock only means a panicking thread held it, and the map
    /// itself is still consistent (every update is a single insert/remove/field write).
    pub(crate) fn live(&self) -> MutexGuard<'_, HashMap<TaskId, LiveRun>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends one event to the task's history; its number.
    pub(crate) async fn record(&self, id: &TaskId, event: NewEvent) -> Result<i64, EngineError> {
        let seqs = self
            .store
            .append_events(id, unix_millis_now(), &[event])
            .await?;
        self.touched(id, false);
        seqs.first()
            .copied()
            .ok_or_else(|| EngineError::Internal("the store numbered no event".to_owned()))
    }

    /// Tells the integrations that task `id` has new events or (`status_changed`) a new state.
    pub(crate) fn touched(&self, id: &TaskId, status_changed: bool) {
        if let Some(letta) = self.letta.get() {
            letta.touch(id, status_changed);
        }
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
            let _ = self.changes.send((updated.id.clone(), updated.status));
            self.touched(&updated.id, true);
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

    /// A claimed task starts running: the Letta integration records what its agent is owed
    /// (a workspace block, a notification) before anything else happens to it.
    pub(crate) async fn workspace_opened(&self, task: &Task) {
        if let Some(letta) = self.letta.get()
            && let Err(e) = letta.task_started(task).await
        {
            tracing::warn!(task = %task.id, error = %e, "cannot record the task's Letta workspace");
        }
    }

    /// Waits until task `id` is terminal, or `limit` passes; returns its latest state.
    pub(crate) async fn wait_settled(
        &self,
        id: &TaskId,
        limit: Duration,
    ) -> Result<Task, EngineError> {
        let mut changes = self.changes.subscribe();
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
            // Wake on this task's next change, on lag (re-read), or at the deadline.
            loop {
                match tokio::time::timeout_at(deadline, changes.recv()).await {
                    Err(_) => return Ok(task),
                    Ok(Ok((changed, _))) if &changed != id => continue,
                    Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => break,
                    Ok(Err(broadcast::error::RecvError::Closed)) => return Ok(task),
                }
            }
        }
    }
}
