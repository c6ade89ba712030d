//! [`ApprovalStore`] for every [`Backend`].

use async_trait::async_trait;
use handoff_task::{AgentId, Approval, AuditRecord, TaskId};

use crate::backend::{Backend, Scope, writing};
use crate::ops::approvals;
use crate::{ApprovalStore, AuditFilter, StoreError};

#[async_trait]
impl<B: Backend> ApprovalStore for B {
    async fn insert_approval(&self, approval: &Approval) -> Result<(), StoreError> {
        writing(self, async {
            let mut tx = self.begin(Scope::Plain).await?;
            approvals::insert(&mut *tx, approval).await?;
            tx.commit().await.map_err(StoreError::from)
        })
        .await
    }

    async fn approvals_for_task(
        &self,
        agent: &AgentId,
        task: &TaskId,
        project: &str,
    ) -> Result<Vec<Approval>, StoreError> {
        approvals::for_task(&mut *self.reader().await?, agent, task, project).await
    }

    async fn list_approvals(
        &self,
        agent: &AgentId,
        task: Option<&TaskId>,
    ) -> Result<Vec<Approval>, StoreError> {
        approvals::list(&mut *self.reader().await?, agent, task).await
    }

    async fn revoke_approval(
        &self,
        agent: &AgentId,
        id: &str,
    ) -> Result<Option<Approval>, StoreError> {
        writing(self, async {
            let mut tx = self.begin(Scope::Plain).await?;
            let revoked = approvals::revoke(&mut *tx, agent, id).await?;
            tx.commit().await?;
            Ok(revoked)
        })
        .await
    }

    async fn append_audit(&self, record: &AuditRecord) -> Result<i64, StoreError> {
        writing(self, async {
            let mut tx = self.begin(Scope::Plain).await?;
            let seq = approvals::append_audit(&mut *tx, record).await?;
            tx.commit().await?;
            Ok(seq)
        })
        .await
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        approvals::audit(&mut *self.reader().await?, filter).await
    }
}
