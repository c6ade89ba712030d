//! The audit trail of Handoff's tool calls: every refusal and every call of a tool that
//! changes something goes to the store (queryable with `get_audit_log`); reads that were
//! allowed only go to the log, so polling does not fill the database.

use handoff_engine::Engine;
use handoff_task::{AuditRecord, TaskId, unix_millis_now};
use serde_json::json;

use crate::pipeline::{AuditEntry, AuditSink, TracingAudit};

/// Writes audit entries to the engine's store (and the log).
#[derive(Debug, Clone)]
pub struct StoreAudit {
    engine: Engine,
    read_only: Vec<&'static str>,
}

impl StoreAudit {
    /// Audits into `engine`'s store; `read_only` names tools whose allowed calls are not stored.
    pub fn new(engine: Engine, read_only: Vec<&'static str>) -> Self {
        Self { engine, read_only }
    }
}

impl AuditSink for StoreAudit {
    fn record(&self, entry: AuditEntry) {
        TracingAudit.record(entry.clone());
        if entry.outcome == "ok" && self.read_only.contains(&entry.tool.as_str()) {
            return;
        }
        let record = AuditRecord {
            seq: 0,
            at: unix_millis_now(),
            agent_id: entry.agent_id.clone(),
            task_id: entry.task_id.as_deref().and_then(|t| TaskId::parse(t).ok()),
            source: "tool".to_owned(),
            subject: entry.tool.clone(),
            outcome: entry.outcome.to_owned(),
            stage: entry.stage.to_owned(),
            reason: entry.reason.clone().unwrap_or_default(),
            detail: json!({ "call_id": entry.call_id, "elapsed_ms": entry.elapsed.as_millis() as u64 }),
        };
        // Only agents' own records are queryable; anonymous calls stay in the log.
        if record.agent_id.is_none() {
            return;
        }
        let engine = self.engine.clone();
        tokio::spawn(async move {
            if let Err(e) = engine.record_audit(&record).await {
                tracing::warn!(error = %e, "could not write the audit record");
            }
        });
    }
}
