//! The Letta integration as an engine plug-in: the engine's notices drive the workspace
//! writers, and the writers read tasks through the engine.

use std::sync::Arc;

use async_trait::async_trait;
use handoff_config::{Config, LettaConfig};
use handoff_engine::{Engine, EngineError, Integration};
use handoff_letta::{
    PendingRequest, ResultDelivery, SourceError, SyncMeter, TaskSnapshot, TaskSource, WorkspaceSync,
};
use handoff_runner::InputKind;
use handoff_store::WorkspaceStore;
use handoff_task::{AgentId, NewEvent, Principal, Task, TaskId, TaskStatus, unix_millis_now};
use handoff_tools::{FollowUp, FollowUps};

/// The name the integration acts under (its principal, in histories and logs).
const ACTOR: &str = "handoff-letta";

/// Letta workspace blocks and notifications, plugged into the engine.
pub(crate) struct LettaPlugin {
    sync: WorkspaceSync,
    config: LettaConfig,
}

impl LettaPlugin {
    /// Starts the integration when `letta.api_url` is set; it reports to `meter`.
    pub(crate) fn start(
        config: &Config,
        engine: &Engine,
        records: Arc<dyn WorkspaceStore>,
        meter: Arc<dyn SyncMeter>,
    ) -> Result<Option<Self>, EngineError> {
        if config.letta.api_url.is_none() {
            return Ok(None);
        }
        let principal = AgentId::parse(ACTOR)
            .map(Principal::Operator)
            .map_err(|e| EngineError::Internal(e.to_string()))?;
        let source = Arc::new(EngineSource {
            engine: engine.clone(),
            principal,
        });
        let sync = WorkspaceSync::start(
            config.letta.clone(),
            records,
            source,
            meter,
            config.tasks.retention,
        )
        .map_err(|e| EngineError::Internal(format!("letta: {e}")))?;
        Ok(Some(Self {
            sync,
            config: config.letta.clone(),
        }))
    }

    /// The running integration (health checks).
    pub(crate) fn sync(&self) -> &WorkspaceSync {
        &self.sync
    }

    /// What the tools may promise Letta agents: a block to read and a message at the end.
    pub(crate) fn follow_ups(&self) -> Arc<dyn FollowUps> {
        Arc::new(LettaFollowUps {
            config: self.config.clone(),
        })
    }
}

/// What this integration does for a task's agent by itself, as the tools' texts tell it.
struct LettaFollowUps {
    config: LettaConfig,
}

impl FollowUps for LettaFollowUps {
    fn for_task(&self, task: &Task) -> FollowUp {
        match WorkspaceSync::owed(&self.config, task) {
            Some(owed) => FollowUp {
                memory_block: Some(owed.block_label),
                message_at_end: owed.notification,
            },
            None => FollowUp::default(),
        }
    }
}

#[async_trait]
impl Integration for LettaPlugin {
    async fn task_started(&self, task: &Task) {
        if let Err(e) = self.sync.task_started(task).await {
            tracing::warn!(task = %task.id, error = %e, "cannot record the task's Letta workspace");
        }
    }

    fn events_appended(&self, task: &TaskId) {
        self.sync.touch(task, false);
    }

    fn status_changed(&self, task: &TaskId, _: TaskStatus) {
        self.sync.touch(task, true);
    }

    fn result_wait_ended(&self, task: &TaskId) {
        self.sync.result_wait_ended(task);
    }

    async fn shutdown(&self) {
        self.sync.shutdown().await;
    }
}

/// The integration's reads: the engine's own overview of a task.
struct EngineSource {
    engine: Engine,
    principal: Principal,
}

#[async_trait]
impl TaskSource for EngineSource {
    async fn snapshot(
        &self,
        id: &TaskId,
        events: u32,
    ) -> Result<Option<TaskSnapshot>, SourceError> {
        let overview = match self.engine.overview(&self.principal, id, events).await {
            Ok(overview) => overview,
            Err(EngineError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(SourceError(e.to_string())),
        };
        let pending_input = overview
            .pending_input
            .iter()
            .map(|r| PendingRequest {
                key: r.id.clone(),
                kind: match r.kind {
                    InputKind::Permission => "permission",
                    InputKind::Question => "question",
                }
                .to_owned(),
                summary: r.title.clone(),
            })
            .collect();
        Ok(Some(TaskSnapshot {
            task: overview.task,
            recent_events: overview.recent_events,
            total_events: overview.total_events,
            artifacts: overview.artifacts,
            pending_input,
            completion: overview.completion,
            at: unix_millis_now(),
        }))
    }

    async fn note(&self, id: &TaskId, event: NewEvent) {
        if let Err(e) = self.engine.note(&self.principal, id, event).await {
            tracing::debug!(task = %id, error = %e, "cannot note a Letta event");
        }
    }

    async fn result_delivery(&self, id: &TaskId) -> Result<ResultDelivery, SourceError> {
        // Asked before the store: a wait ends only after its delivery is stored, so a wait
        // seen ended has its outcome in the task already.
        if self.engine.awaits_result(id) {
            return Ok(ResultDelivery::Awaited);
        }
        match self.engine.readable(&self.principal, id).await {
            Ok(task) if task.result_delivered_at.is_some() => Ok(ResultDelivery::Delivered),
            Ok(_) | Err(EngineError::NotFound(_)) => Ok(ResultDelivery::NotDelivered),
            Err(e) => Err(SourceError(e.to_string())),
        }
    }

    async fn writes_here(&self, id: &TaskId) -> Result<bool, SourceError> {
        self.engine
            .writes_for(id)
            .await
            .map_err(|e| SourceError(e.to_string()))
    }
}
