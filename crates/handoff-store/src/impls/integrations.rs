//! [`ChannelStore`] and [`WorkspaceStore`] (the integrations' records) for every [`Backend`].

use async_trait::async_trait;
use handoff_task::{TaskId, WorkspaceRecord};

use crate::backend::{Backend, Scope, writing};
use crate::ops::{channels, workspaces};
use crate::{ChannelRecord, ChannelStore, StoreError, WorkspaceBacklog, WorkspaceStore};

#[async_trait]
impl<B: Backend> ChannelStore for B {
    async fn put_channel(&self, record: &ChannelRecord) -> Result<(), StoreError> {
        writing(self, async {
            channels::put(&mut *self.writer().await?, record).await
        })
        .await
    }

    async fn channel(
        &self,
        integration: &str,
        task: &TaskId,
    ) -> Result<Option<ChannelRecord>, StoreError> {
        channels::get(&mut *self.reader().await?, integration, task).await
    }

    async fn channel_by_id(
        &self,
        integration: &str,
        channel_id: &str,
    ) -> Result<Option<ChannelRecord>, StoreError> {
        channels::by_id(&mut *self.reader().await?, integration, channel_id).await
    }

    async fn open_channels(&self, integration: &str) -> Result<Vec<ChannelRecord>, StoreError> {
        channels::open(&mut *self.reader().await?, integration).await
    }

    async fn cursor(&self, integration: &str, name: &str) -> Result<Option<String>, StoreError> {
        channels::cursor(&mut *self.reader().await?, integration, name).await
    }

    async fn set_cursor(
        &self,
        integration: &str,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        writing(self, async {
            channels::set_cursor(&mut *self.writer().await?, integration, name, value).await
        })
        .await
    }

    async fn mark_applied(
        &self,
        integration: &str,
        key: &str,
        at: i64,
    ) -> Result<bool, StoreError> {
        writing(self, async {
            channels::mark_applied(&mut *self.writer().await?, integration, key, at).await
        })
        .await
    }
}

#[async_trait]
impl<B: Backend> WorkspaceStore for B {
    async fn insert_workspace(
        &self,
        record: &WorkspaceRecord,
    ) -> Result<WorkspaceRecord, StoreError> {
        writing(self, async {
            let mut tx = self.begin(Scope::Task(record.task_id.as_str())).await?;
            let stored = workspaces::insert_new(&mut *tx, record).await?;
            tx.commit().await?;
            Ok(stored)
        })
        .await
    }

    async fn put_workspace(&self, record: &WorkspaceRecord) -> Result<(), StoreError> {
        writing(self, async {
            workspaces::put(&mut *self.writer().await?, record).await
        })
        .await
    }

    async fn workspace(&self, task: &TaskId) -> Result<Option<WorkspaceRecord>, StoreError> {
        workspaces::get(&mut *self.reader().await?, task).await
    }

    async fn workspaces_due(
        &self,
        now: i64,
        limit: u32,
    ) -> Result<Vec<WorkspaceRecord>, StoreError> {
        workspaces::due(&mut *self.reader().await?, now, limit).await
    }

    async fn next_workspace_due(&self) -> Result<Option<i64>, StoreError> {
        workspaces::next_due(&mut *self.reader().await?).await
    }

    async fn workspace_backlog(&self) -> Result<WorkspaceBacklog, StoreError> {
        workspaces::backlog(&mut *self.reader().await?).await
    }
}
