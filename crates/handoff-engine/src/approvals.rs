//! The agent's view of its standing approvals and of the audit trail.

use handoff_store::AuditFilter;
use handoff_task::{AgentId, Approval, AuditRecord, Principal, TaskId};

use crate::{Engine, EngineError};

/// Most audit records one query returns.
pub const MAX_AUDIT_PAGE: u32 = 500;

impl Engine {
    /// The caller's standing approvals, optionally only those given in one of its tasks; an
    /// operator naming a task sees the approvals given in it, whoever's task it is.
    pub async fn list_approvals(
        &self,
        caller: &Principal,
        task: Option<&TaskId>,
    ) -> Result<Vec<Approval>, EngineError> {
        let owner = match (caller, task) {
            (Principal::Operator(_), Some(task)) => self.readable(caller, task).await?.agent_id,
            (_, Some(task)) => {
                self.steerable(caller, task).await?;
                caller.name().clone()
            }
            (_, None) => caller.name().clone(),
        };
        Ok(self.inner.store.list_approvals(&owner, task).await?)
    }

    /// Revokes one of `agent`'s approvals: later requests are judged by the rules again.
    pub async fn revoke_approval(
        &self,
        agent: &AgentId,
        id: &str,
    ) -> Result<Approval, EngineError> {
        self.inner
            .store
            .revoke_approval(agent, id)
            .await?
            .ok_or_else(|| {
                EngineError::invalid("approval_id", format!("no approval {id} of yours"))
            })
    }

    /// The caller's audit records, newest first; for an operator naming a task, that task's whole
    /// trail.
    pub async fn audit(
        &self,
        caller: &Principal,
        task: Option<&TaskId>,
        before_seq: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditRecord>, EngineError> {
        let agent = match (caller, task) {
            // An operator sees a task's whole trail: its owner's executor decisions and every
            // caller's steering of it.
            (Principal::Operator(_), Some(task)) => {
                self.readable(caller, task).await?;
                None
            }
            (_, Some(task)) => {
                self.steerable(caller, task).await?;
                Some(caller.name().clone())
            }
            (_, None) => Some(caller.name().clone()),
        };
        Ok(self
            .inner
            .store
            .audit(&AuditFilter {
                agent,
                task: task.cloned(),
                before_seq,
                limit: limit.clamp(1, MAX_AUDIT_PAGE),
            })
            .await?)
    }

    /// Appends a record to the audit trail (decisions on Handoff's own tool calls).
    pub async fn record_audit(&self, record: &AuditRecord) -> Result<(), EngineError> {
        self.inner.store.append_audit(record).await?;
        Ok(())
    }
}
