//! The engine's side of the Letta integration: it starts the integration when a Letta server
//! is configured and answers its reads ([`TaskSource`]) with what `get_task_status` shows.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use handoff_letta::{PendingRequest, SourceError, TaskSnapshot, TaskSource, WorkspaceSync};
use handoff_runner::InputKind;
use handoff_task::{NewEvent, TaskId, unix_millis_now};

use crate::{
    EngineError,
    engine::Inner,
    query::{CONCLUSION_EVENTS, evaluator_conclusion},
};

/// Starts the integration if `letta.api_url` is set.
pub(crate) fn start(inner: &Arc<Inner>) -> Result<(), EngineError> {
    let config = &inner.config;
    if config.letta.api_url.is_none() {
        return Ok(());
    }
    let retention = config.tasks.retention;
    let source = Arc::new(EngineSource(Arc::downgrade(inner)));
    let sync = WorkspaceSync::start(config.letta.clone(), inner.store.clone(), source, retention)
        .map_err(|e| EngineError::invalid("letta", e.to_string()))?;
    // Set once, right after the engine state is built.
    let _ = inner.letta.set(sync);
    Ok(())
}

/// Reads for the integration; weak, so the integration never keeps a stopped engine alive.
struct EngineSource(Weak<Inner>);

impl EngineSource {
    fn inner(&self) -> Result<Arc<Inner>, SourceError> {
        self.0
            .upgrade()
            .ok_or_else(|| SourceError("the engine has stopped".to_owned()))
    }
}

fn failed(e: impl std::fmt::Display) -> SourceError {
    SourceError(e.to_string())
}

#[async_trait]
impl TaskSource for EngineSource {
    async fn snapshot(
        &self,
        id: &TaskId,
        events: u32,
    ) -> Result<Option<TaskSnapshot>, SourceError> {
        let inner = self.inner()?;
        let store = &inner.store;
        let Some(task) = store.get_task(id).await.map_err(failed)? else {
            return Ok(None);
        };
        let recent_events = store
            .recent_events(id, events.max(CONCLUSION_EVENTS))
            .await
            .map_err(failed)?;
        let completion = evaluator_conclusion(&recent_events);
        let shown = recent_events.len().saturating_sub(events as usize);
        let recent_events = recent_events[shown..].to_vec();
        let total_events = store.events(id, 0, 0).await.map_err(failed)?.1;
        let artifacts = store.artifacts(id).await.map_err(failed)?;
        let pending_input = inner
            .live()
            .get(id)
            .map(|run| {
                run.pending
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
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(TaskSnapshot {
            task,
            recent_events,
            total_events,
            artifacts,
            pending_input,
            completion,
            at: unix_millis_now(),
        }))
    }

    async fn note(&self, id: &TaskId, event: NewEvent) {
        let Ok(inner) = self.inner() else {
            return;
        };
        if let Err(e) = inner.record(id, event).await {
            tracing::debug!(task = %id, error = %e, "cannot note a Letta event");
        }
    }
}
