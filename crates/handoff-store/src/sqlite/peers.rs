//! [`PeerStore`] on SQLite: the file admits one instance, so a command is only ever posted by
//! a caller that found no run of its own (tests use this); wake-ups come from this handle.

use async_trait::async_trait;
use handoff_task::TaskId;
use tokio::sync::broadcast;

use super::SqliteStore;
use crate::{PeerStore, PostedCommand, StoreError, StoreSignal, commands};

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
                Ok(sqlx::query_scalar(commands::POST)
                    .bind(task.as_str())
                    .bind(target)
                    .bind(body)
                    .bind(at)
                    .fetch_one(&self.write)
                    .await?)
            })
            .await?;
        let _ = self.signals.send(StoreSignal::CommandPosted {
            target: target.to_owned(),
        });
        Ok(id)
    }

    async fn take_commands(&self, target: &str, at: i64) -> Result<Vec<PostedCommand>, StoreError> {
        self.writing(async {
            let rows = sqlx::query(commands::TAKE)
                .bind(at)
                .bind(target)
                .fetch_all(&self.write)
                .await?;
            rows.iter().map(commands::from_row).collect()
        })
        .await
    }

    async fn take_task_commands(
        &self,
        task: &TaskId,
        at: i64,
    ) -> Result<Vec<PostedCommand>, StoreError> {
        self.writing(async {
            let rows = sqlx::query(commands::TAKE_FOR_TASK)
                .bind(at)
                .bind(task.as_str())
                .fetch_all(&self.write)
                .await?;
            rows.iter().map(commands::from_row).collect()
        })
        .await
    }

    async fn withdraw_command(&self, id: i64) -> Result<bool, StoreError> {
        self.writing(async {
            Ok(sqlx::query(commands::WITHDRAW)
                .bind(id)
                .execute(&self.write)
                .await?
                .rows_affected()
                == 1)
        })
        .await
    }

    async fn reply_command(&self, id: i64, reply: &str, at: i64) -> Result<bool, StoreError> {
        let done = self
            .writing(async {
                Ok(sqlx::query(commands::REPLY)
                    .bind(reply)
                    .bind(at)
                    .bind(id)
                    .execute(&self.write)
                    .await?
                    .rows_affected()
                    == 1)
            })
            .await?;
        let _ = self.signals.send(StoreSignal::CommandReplied { id });
        Ok(done)
    }

    async fn command_reply(&self, id: i64) -> Result<Option<String>, StoreError> {
        let reply: Option<Option<String>> = sqlx::query_scalar(commands::REPLY_OF)
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        Ok(reply.flatten())
    }

    async fn ran_on(&self, id: &TaskId) -> Result<Option<String>, StoreError> {
        let ran_on: Option<Option<String>> = sqlx::query_scalar(commands::RAN_ON)
            .bind(id.as_str())
            .fetch_optional(&self.read)
            .await?;
        Ok(ran_on.flatten())
    }

    async fn purge_commands(&self, before: i64) -> Result<u64, StoreError> {
        self.writing(async {
            Ok(sqlx::query(commands::PURGE)
                .bind(before)
                .execute(&self.write)
                .await?
                .rows_affected())
        })
        .await
    }

    async fn broadcast(&self, _body: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn signals(&self) -> Result<broadcast::Receiver<StoreSignal>, StoreError> {
        Ok(self.signals.subscribe())
    }
}
