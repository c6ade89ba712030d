//! [`PeerStore`] on SQLite: the file admits one instance, so a command is only ever posted by
//! a caller that found no run of its own (tests use this); wake-ups come from this handle.

use async_trait::async_trait;
use handoff_task::TaskId;
use tokio::sync::broadcast;

use super::SqliteStore;
use crate::backend::Backend;
use crate::ops::commands;
use crate::{PeerStore, PostedCommand, StoreError, StoreSignal};

#[async_trait]
impl PeerStore for SqliteStore {
    async fn post_command(
        &self,
        task: &TaskId,
        target: &str,
        body: &str,
        at: i64,
    ) -> Result<i64, StoreError> {
        let id = self
            .writing(async {
                commands::post(&mut *self.writer().await?, task, target, body, at).await
            })
            .await?;
        let _ = self.signals.send(StoreSignal::CommandPosted {
            target: target.to_owned(),
        });
        Ok(id)
    }

    async fn take_commands(&self, target: &str, at: i64) -> Result<Vec<PostedCommand>, StoreError> {
        self.writing(async {
            let mut conn = self.writer().await?;
            commands::take(&mut *conn, crate::commands::TAKE, target, at).await
        })
        .await
    }

    async fn take_task_commands(
        &self,
        task: &TaskId,
        at: i64,
    ) -> Result<Vec<PostedCommand>, StoreError> {
        self.writing(async {
            let mut conn = self.writer().await?;
            commands::take(
                &mut *conn,
                crate::commands::TAKE_FOR_TASK,
                task.as_str(),
                at,
            )
            .await
        })
        .await
    }

    async fn withdraw_command(&self, id: i64) -> Result<bool, StoreError> {
        self.writing(async { commands::withdraw(&mut *self.writer().await?, id).await })
            .await
    }

    async fn reply_command(&self, id: i64, reply: &str, at: i64) -> Result<bool, StoreError> {
        let done = self
            .writing(async { commands::reply(&mut *self.writer().await?, id, reply, at).await })
            .await?;
        let _ = self.signals.send(StoreSignal::CommandReplied { id });
        Ok(done)
    }

    async fn command_reply(&self, id: i64) -> Result<Option<String>, StoreError> {
        commands::reply_of(&mut *self.reader().await?, id).await
    }

    async fn ran_on(&self, id: &TaskId) -> Result<Option<String>, StoreError> {
        commands::ran_on(&mut *self.reader().await?, id).await
    }

    async fn purge_commands(&self, before: i64) -> Result<u64, StoreError> {
        self.writing(async { commands::purge(&mut *self.writer().await?, before).await })
            .await
    }

    async fn broadcast(&self, _body: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn signals(&self) -> Result<broadcast::Receiver<StoreSignal>, StoreError> {
        Ok(self.signals.subscribe())
    }
}
