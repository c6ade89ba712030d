//! The audit trail of Handoff's tool calls: every refusal of a tool that changes something and
//! every call of one goes to the store (queryable with `get_audit_log`). Reads only go to the
//! log, and their refusals (an unknown task id, say) are counted in the metrics instead: a
//! stranger's failed reads must not become writes. Calls of unknown tools and calls refused by
//! the failed-call rate limit are counted, not stored, for the same reason.

use handoff_engine::Engine;
use handoff_protocol::codes;
use handoff_task::{AuditRecord, TaskId, unix_millis_now};
use serde_json::json;

use crate::pipeline::{AuditEntry, AuditSink, RATE_LIMIT_STAGE, TracingAudit};

/// Writes audit entries to the engine's store (and the log).
#[derive(Debug, Clone)]
pub struct StoreAudit {
    engine: Engine,
    read_only: Vec<&'static str>,
}

impl StoreAudit {
    /// Audits into `engine`'s store; `read_only` names tools whose calls are not stored.
    pub fn new(engine: Engine, read_only: Vec<&'static str>) -> Self {
        Self { engine, read_only }
    }

    /// Whether a refused call is counted rather than stored.
    fn counted_only(&self, entry: &AuditEntry) -> bool {
        self.read_only.contains(&entry.tool.as_str())
            || entry.outcome == codes::UNKNOWN_TOOL
            || entry.stage == RATE_LIMIT_STAGE
    }
}

impl AuditSink for StoreAudit {
    fn record(&self, entry: AuditEntry) {
        TracingAudit::log(&entry);
        if entry.outcome == "ok" && self.read_only.contains(&entry.tool.as_str()) {
            return;
        }
        if entry.outcome != "ok" && self.counted_only(&entry) {
            // Unknown names are the caller's text: one label for all keeps the series bounded.
            let tool = if entry.outcome == codes::UNKNOWN_TOOL {
                "unknown"
            } else {
                entry.tool.as_str()
            };
            self.engine
                .metrics()
                .refused_call_unrecorded(tool, entry.outcome);
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
