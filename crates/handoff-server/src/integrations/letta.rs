//! The Letta integration as an engine plug-in: the engine's notices drive the workspace
//! writers, and the writers read tasks through the engine.

use std::sync::Arc;

use async_trait::async_trait;
use handoff_config::{Config, LettaConfig};
use handoff_engine::{Engine, EngineError, Integration};
use handoff_letta::{SyncMeter, WorkspaceSync};
use handoff_store::WorkspaceStore;
use handoff_task::{Task, TaskId, TaskStatus};
use handoff_tools::{FollowUp, FollowUps};

use super::source::EngineSource;

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
        let source = Arc::new(EngineSource::new(engine, ACTOR, "Letta")?);
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
