//! The engine's public face and its start-up wiring: build the shared state, plug in the
//! integrations, reconcile what a dead server left, start the scheduler and the sweeper; and
//! the orderly shutdown.

use std::{path::PathBuf, sync::Arc, time::Duration};

use handoff_config::Config;
use handoff_protocol::TaskNotice;
use handoff_runner::ExecutorRegistry;
use handoff_store::{InstanceSummary, Store};
use handoff_task::TaskStatus;
use tokio::sync::{Notify, broadcast};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    EngineError, EngineMetrics,
    finish::StopReason,
    membership,
    outbox::{Integration, Outbox, TaskSubscription},
    peers,
    rate::KeyedRate,
    recovery, rescuer, retention, scheduler,
    shared::Shared,
    snapshot::{SizeLimits, Snapshots},
    state::EngineState,
    workdir::Workdirs,
};

/// The task engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<EngineState>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("executors", &self.inner.executors)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Builds an engine that runs nothing yet: integrations that need to read through it are
    /// built next, then [`Engine::run`] starts it.
    pub fn new(
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
        let artifacts_dir: PathBuf = std::path::absolute(config.data_dir.join("artifacts"))
            .map_err(|e| EngineError::io("data dir", e))?;
        let rate = KeyedRate::new(
            "submit",
            config.tasks.submissions_per_minute,
            config.tasks.submission_burst,
        );
        let policy = crate::policy::TaskPolicy::new(&config);
        // After the data dir is locked (the composition root's job): the id file it keeps names
        // a predecessor that is certainly gone.
        let instance = crate::instance::Instance::new(&config.data_dir);
        let judge = match config.evaluator.llm() {
            Some(llm) => Some(
                handoff_llm::LlmClient::from_config(llm)
                    .map_err(|e| EngineError::invalid("evaluator", e.to_string()))?,
            ),
            None => None,
        };
        let snapshots = Snapshots::new(
            artifacts_dir.with_file_name("snapshots"),
            SizeLimits {
                max_file: config.tasks.snapshot_max_file_bytes.bytes(),
                max_bytes: config.tasks.snapshot_max_bytes.bytes(),
            },
            config.tasks.snapshot_timeout,
        );
        let inner = Arc::new(EngineState::new(Shared {
            policy,
            judge,
            config,
            store,
            executors,
            metrics,
            workdirs,
            rate,
            snapshots,
            artifacts_dir,
            wake: Notify::new(),
            outbox: Outbox::new(),
            shutdown: CancellationToken::new(),
            runs: TaskTracker::new(),
            instance,
            result_waits: Default::default(),
            run_fence: std::sync::OnceLock::new(),
        }));
        Ok(Self { inner })
    }

    /// Plugs in the integrations, reconciles the store with reality (tasks left running by a
    /// dead server), then starts the scheduler and the retention sweeper.
    pub async fn run(&self, integrations: Vec<Arc<dyn Integration>>) -> Result<(), EngineError> {
        self.inner.outbox.plug(integrations);
        membership::register(&self.inner).await?;
        tokio::spawn(membership::heartbeats(self.inner.clone()));
        tokio::spawn(crate::fence::guard(self.inner.clone()));
        peers::start(&self.inner).await?;
        recovery::reconcile(&self.inner).await?;
        membership::forget_predecessor(&self.inner).await;
        // The tasks of instances that died while this one was down are taken over once it has
        // reached the store for a lease expiry (it cannot tell dead peers from late ones
        // before).
        tokio::spawn(rescuer::run(self.inner.clone()));
        tokio::spawn(scheduler::run(self.inner.clone()));
        tokio::spawn(retention::run(self.inner.clone()));
        Ok(())
    }

    /// [`Engine::new`] then [`Engine::run`] without integrations.
    pub async fn start(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        executors: ExecutorRegistry,
        metrics: EngineMetrics,
    ) -> Result<Self, EngineError> {
        let engine = Self::new(config, store, executors, metrics)?;
        engine.run(Vec::new()).await?;
        Ok(engine)
    }

    /// Hands the engine the run keeper ([`handoff_runner::fence::RunFence`]) that freezes its
    /// runs from outside when their leases lapse; before [`Engine::run`].
    pub fn use_run_fence(&self, fence: handoff_runner::fence::RunFence) {
        let _ = self.inner.run_fence.set(Arc::new(fence));
    }

    /// This process's instance id in the store (the owner named by the leases it holds; a new
    /// one after the instance was declared lost and came back).
    pub fn instance_id(&self) -> Arc<str> {
        self.inner.instance.id()
    }

    /// Every task event and state change from now on. A receiver that falls behind gets
    /// `Lagged` and should re-read what it follows from the store.
    pub fn subscribe(&self) -> broadcast::Receiver<TaskNotice> {
        self.inner.outbox.subscribe()
    }

    /// Every event and state change of task `id` from now on.
    pub fn subscribe_task(&self, id: &handoff_task::TaskId) -> TaskSubscription {
        self.inner.outbox.subscribe_task(id)
    }

    /// Stops taking new work, lets the runs in flight finish for up to `tasks.drain`, then stops
    /// the rest (politely, then by force): they end `failed` ("interrupted: server shut down"),
    /// or back in the queue if they opted in to re-running. Returns once every run has settled
    /// or the grace period (plus slack) passed.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.runs.close();
        // The claims ended with the cancel above: others see this instance take nothing more
        // while its runs finish or settle. On a task of its own: a store write held half-done
        // by a caller that polls this future only now and then would keep the runs' own
        // writes (and so their stops) waiting.
        let draining = {
            let inner = self.inner.clone();
            tokio::spawn(async move { membership::drain(&inner).await })
        };
        let drain = self.inner.config.tasks.drain;
        if !drain.is_zero()
            && tokio::time::timeout(drain, self.inner.runs.wait())
                .await
                .is_err()
        {
            tracing::info!(drain = ?drain, "runs still going after the drain; stopping them");
        }
        self.inner.supervisors.stop_all(StopReason::Shutdown).await;
        let grace = self.inner.config.tasks.cancel_grace;
        if tokio::time::timeout(grace + Duration::from_secs(5), self.inner.runs.wait())
            .await
            .is_err()
        {
            tracing::warn!("some runs did not settle before shutdown");
        }
        let _ = draining.await;
        membership::leave(&self.inner).await;
        // After the runs: their final states reach the store first, and the next start
        // resumes whatever the integrations left.
        self.inner.outbox.shutdown().await;
    }

    /// Cuts a [`Engine::shutdown`] short: every run in flight is killed now instead of after
    /// the grace (a second SIGINT/SIGTERM; clients such as Claude Code send SIGKILL within a
    /// second), so their final states still reach the store.
    pub async fn stop_runs_now(&self) {
        self.inner.shutdown.cancel();
        self.inner.supervisors.stop_all_now().await;
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

    /// Whether other instances share this one's store (PostgreSQL).
    pub fn shares_store(&self) -> bool {
        self.inner.store.is_shared()
    }

    /// Whether this instance is the one to keep integrations (Letta blocks and notifications)
    /// in step for task `id`: while it runs, the holder of its lease; afterwards the instance
    /// that ran it while that one is registered, else the oldest registered instance — one
    /// writer per task across instances. Always this one on a store of one instance.
    pub async fn writes_for(&self, id: &handoff_task::TaskId) -> Result<bool, EngineError> {
        let inner = &self.inner;
        if !inner.store.is_shared() {
            return Ok(true);
        }
        let me = inner.instance.id();
        let me = &*me;
        let task = inner.store.get_task(id).await?;
        if let Some(lease) = task.and_then(|t| t.lease.filter(|_| t.status.is_active())) {
            return Ok(lease.owner == me);
        }
        let registered = inner.store.instances().await?;
        let alive = |id: &str| registered.iter().any(|i| i.instance.id == id);
        if let Some(ran_on) = inner.store.ran_on(id).await?.filter(|r| alive(r)) {
            return Ok(ran_on == me);
        }
        Ok(registered.first().is_some_and(|i| i.instance.id == me))
    }

    /// The instances sharing the store with the tasks each holds, oldest first (for health and
    /// `handoff instances`; [`Engine::instance_id`] says which is this one).
    pub async fn instances(&self) -> Result<Vec<InstanceSummary>, EngineError> {
        Ok(self.inner.store.instances().await?)
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
