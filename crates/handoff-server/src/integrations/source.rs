//! The integrations' reads, one implementation for all: the engine's own overview of a task,
//! its final answer as `get_task_status` gives it, who writes about it, and notes in its
//! history, read and written as the integration's operator principal.

use async_trait::async_trait;
use handoff_engine::{Engine, EngineError};
use handoff_integration::{PendingRequest, ResultDelivery, SourceError, TaskOverview, TaskSource};
use handoff_runner::InputKind;
use handoff_task::{AgentId, NewEvent, Principal, TaskId, unix_millis_now};

/// An integration's view of the engine.
pub(crate) struct EngineSource {
    engine: Engine,
    principal: Principal,
    /// The integration in logs ("Letta", "Matrix").
    label: &'static str,
}

impl EngineSource {
    /// The source of the integration named `label`, acting as the operator `actor`.
    pub(crate) fn new(
        engine: &Engine,
        actor: &str,
        label: &'static str,
    ) -> Result<Self, EngineError> {
        let principal = AgentId::parse(actor)
            .map(Principal::Operator)
            .map_err(|e| EngineError::Internal(e.to_string()))?;
        Ok(Self {
            engine: engine.clone(),
            principal,
            label,
        })
    }
}

fn failed(e: impl ToString) -> SourceError {
    SourceError(e.to_string())
}

#[async_trait]
impl TaskSource for EngineSource {
    async fn overview(
        &self,
        id: &TaskId,
        events: u32,
    ) -> Result<Option<TaskOverview>, SourceError> {
        let overview = match self.engine.overview(&self.principal, id, events).await {
            Ok(overview) => overview,
            Err(EngineError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(failed(e)),
        };
        let pending_input = overview
            .pending_input
            .iter()
            .map(|r| PendingRequest {
                id: r.id.clone(),
                kind: match r.kind {
                    InputKind::Permission => "permission",
                    InputKind::Question => "question",
                }
                .to_owned(),
                title: r.title.clone(),
            })
            .collect();
        let model_usage = self
            .engine
            .model_usage(&overview.task)
            .await
            .map_err(failed)?;
        Ok(Some(TaskOverview {
            task: overview.task,
            recent_events: overview.recent_events,
            total_events: overview.total_events,
            artifacts: overview.artifacts,
            pending_input,
            completion: overview.completion,
            model_usage,
            at: unix_millis_now(),
        }))
    }

    async fn note(&self, id: &TaskId, event: NewEvent) {
        if let Err(e) = self.engine.note(&self.principal, id, event).await {
            tracing::debug!(task = %id, error = %e, "cannot note a {} event", self.label);
        }
    }

    async fn final_answer(&self, id: &TaskId) -> Result<Option<String>, SourceError> {
        handoff_tools::tasks::final_answer(&self.engine, &self.principal, id)
            .await
            .map_err(failed)
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
            Err(e) => Err(failed(e)),
        }
    }

    async fn writes_here(&self, id: &TaskId) -> Result<bool, SourceError> {
        self.engine.writes_for(id).await.map_err(failed)
    }

    async fn adopts(&self, id: &TaskId) -> Result<bool, SourceError> {
        if !self.engine.shares_store() {
            return Ok(false);
        }
        self.writes_here(id).await
    }
}
