//! [`TaskStore`] for every [`Backend`]: which transaction each operation runs in, and the
//! leases it takes up or lets go of.

use async_trait::async_trait;
use handoff_task::{
    AgentId, Artifact, EventKind, NewEvent, NewTask, PendingInput, Task, TaskEvent, TaskId,
    TaskStatus,
};
use serde_json::Value;

use crate::backend::{Backend, Scope, TaskWriter, begin_task, writing};
use crate::ops::{events, inputs, tasks};
use crate::rows::{SET_RUNNER_STATE, SET_WORKDIR};
use crate::sql::Sql;
use crate::{
    ClaimLimits, IdempotencyClaim, InsertOutcome, LeaseGrant, NewArtifact, Reopen, StatusChange,
    StoreError, TaskFilter, TaskPage, TaskStore,
};

/// Runs `sql` (`UPDATE tasks SET <column> = ? WHERE id = ?`) with `value`; fenced when this
/// handle holds the task's lease.
async fn update_task<B: Backend>(
    store: &B,
    id: &TaskId,
    sql: &'static str,
    value: Option<String>,
) -> Result<(), StoreError> {
    writing(store, async {
        let mut writer = TaskWriter::open(store, id).await?;
        Sql::new(sql)
            .bind(value)
            .bind(id.as_str())
            .execute(&mut *writer)
            .await?;
        writer.finish().await
    })
    .await
}

#[async_trait]
impl<B: Backend> TaskStore for B {
    async fn insert_task(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<InsertOutcome, StoreError> {
        writing(self, async {
            let (mut tx, queued) = self.begin_insert(task, idempotency, max_queued).await?;
            let outcome = tasks::insert(&mut *tx, task, idempotency, max_queued, queued).await?;
            tx.commit().await?;
            Ok(outcome)
        })
        .await
    }

    async fn find_idempotent(
        &self,
        agent: &AgentId,
        claim: &IdempotencyClaim,
    ) -> Result<Option<Task>, StoreError> {
        tasks::find_idempotent(&mut *self.reader().await?, agent, claim).await
    }

    async fn find_repeated(&self, task: &NewTask) -> Result<Option<Vec<TaskId>>, StoreError> {
        tasks::find_repeated(&mut *self.reader().await?, task).await
    }

    async fn get_task(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.read_task(id).await
    }

    async fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
        self.read_list(filter).await
    }

    async fn claim(
        &self,
        limits: ClaimLimits,
        at: i64,
        lease: Option<&LeaseGrant>,
    ) -> Result<Option<Task>, StoreError> {
        writing(self, async {
            let mut tx = self.begin(Scope::Claims).await?;
            let claimed = tasks::claim(&mut *tx, limits, at, lease).await?;
            tx.commit().await?;
            if let Some(task) = &claimed {
                self.held().hold(task);
            }
            Ok(claimed)
        })
        .await
    }

    async fn set_status(
        &self,
        id: &TaskId,
        change: &StatusChange,
    ) -> Result<Option<Task>, StoreError> {
        writing(self, async {
            let mut tx = begin_task(self, id).await?;
            let updated = tasks::set_status(&mut *tx, id, change).await?;
            tx.commit().await?;
            if updated.as_ref().is_some_and(|t| t.status.is_terminal()) {
                self.held().release(id);
            }
            Ok(updated)
        })
        .await
    }

    async fn requeue(
        &self,
        id: &TaskId,
        from: TaskStatus,
        at: i64,
        reason: &str,
    ) -> Result<Option<Task>, StoreError> {
        writing(self, async {
            let mut tx = begin_task(self, id).await?;
            let updated = tasks::requeue(&mut *tx, id, from, at, reason).await?;
            tx.commit().await?;
            if updated.is_some() {
                self.held().release(id);
            }
            Ok(updated)
        })
        .await
    }

    async fn reopen(&self, id: &TaskId, reopen: &Reopen) -> Result<Option<Task>, StoreError> {
        writing(self, async {
            let mut tx = begin_task(self, id).await?;
            let updated = tasks::reopen(&mut *tx, id, reopen).await?;
            tx.commit().await?;
            Ok(updated)
        })
        .await
    }

    async fn set_runner_state(&self, id: &TaskId, state: Option<&Value>) -> Result<(), StoreError> {
        update_task(self, id, SET_RUNNER_STATE, state.map(Value::to_string)).await
    }

    async fn set_workdir(&self, id: &TaskId, workdir: &str) -> Result<(), StoreError> {
        update_task(self, id, SET_WORKDIR, Some(workdir.to_owned())).await
    }

    async fn mark_result_delivered(&self, id: &TaskId, at: i64) -> Result<(), StoreError> {
        writing(self, async {
            Sql::new(
                "UPDATE tasks SET result_delivered_at = COALESCE(result_delivered_at, ?) \
                 WHERE id = ?",
            )
            .bind(at)
            .bind(id.as_str())
            .execute(&mut *self.writer().await?)
            .await?;
            Ok(())
        })
        .await
    }

    async fn append_events(
        &self,
        id: &TaskId,
        at: i64,
        events: &[NewEvent],
    ) -> Result<Vec<i64>, StoreError> {
        writing(self, async {
            let mut tx = begin_task(self, id).await?;
            let seqs = events::append(&mut *tx, id, at, events).await?;
            tx.commit().await?;
            Ok(seqs)
        })
        .await
    }

    async fn events(
        &self,
        id: &TaskId,
        offset: u64,
        limit: u32,
    ) -> Result<(Vec<TaskEvent>, u64), StoreError> {
        let mut tx = self.snapshot().await?;
        let page = events::page(&mut *tx, id, offset, limit).await?;
        tx.commit().await?;
        Ok(page)
    }

    async fn recent_events(&self, id: &TaskId, n: u32) -> Result<Vec<TaskEvent>, StoreError> {
        self.read_recent(id, n).await
    }

    async fn last_event_of_kind(
        &self,
        id: &TaskId,
        kind: EventKind,
    ) -> Result<Option<TaskEvent>, StoreError> {
        self.read_last_of_kind(id, kind).await
    }

    async fn put_artifact(
        &self,
        id: &TaskId,
        at: i64,
        artifact: &NewArtifact,
    ) -> Result<(), StoreError> {
        writing(self, async {
            let mut writer = TaskWriter::open(self, id).await?;
            events::put_artifact(&mut *writer, id, at, artifact).await?;
            writer.finish().await
        })
        .await
    }

    async fn artifacts(&self, id: &TaskId) -> Result<Vec<Artifact>, StoreError> {
        events::artifacts(&mut *self.reader().await?, id).await
    }

    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
        tasks::count_by_status(&mut *self.reader().await?).await
    }

    async fn queue_position(&self, id: &TaskId) -> Result<Option<u64>, StoreError> {
        let mut tx = self.snapshot().await?;
        let position = tasks::queue_position(&mut *tx, id).await?;
        tx.commit().await?;
        Ok(position)
    }

    async fn tasks_in(&self, statuses: &[TaskStatus]) -> Result<Vec<Task>, StoreError> {
        tasks::tasks_in(&mut *self.reader().await?, statuses).await
    }

    async fn purge_terminal(&self, before: i64, limit: u32) -> Result<Vec<Task>, StoreError> {
        writing(self, async {
            let mut tx = self.begin(Scope::Sweep).await?;
            let purged = tasks::purge(&mut *tx, before, limit).await?;
            for task in &purged {
                crate::ops::approvals::purge_task(&mut *tx, &task.id).await?;
            }
            crate::ops::approvals::purge_audit(&mut *tx, before).await?;
            crate::ops::workspaces::purge(&mut *tx, before).await?;
            tx.commit().await?;
            Ok(purged)
        })
        .await
    }

    async fn put_input_request(&self, input: &PendingInput) -> Result<(), StoreError> {
        writing(self, async {
            let mut writer = TaskWriter::open(self, &input.task_id).await?;
            inputs::put(&mut *writer, input).await?;
            writer.finish().await
        })
        .await
    }

    async fn delete_input_request(
        &self,
        task: &TaskId,
        request_id: &str,
    ) -> Result<bool, StoreError> {
        writing(self, async {
            let mut writer = TaskWriter::open(self, task).await?;
            let done = inputs::delete(&mut *writer, task, request_id).await?;
            writer.finish().await?;
            Ok(done)
        })
        .await
    }

    async fn input_requests(&self, task: &TaskId) -> Result<Vec<PendingInput>, StoreError> {
        self.read_inputs(task).await
    }

    async fn clear_input_requests(&self, task: &TaskId) -> Result<(), StoreError> {
        writing(self, async {
            let mut writer = TaskWriter::open(self, task).await?;
            inputs::clear(&mut *writer, task).await?;
            writer.finish().await
        })
        .await
    }
}
