//! [`PeerStore`] for every [`Backend`]: the commands' statements and transactions once; the
//! wake-ups are the store's ([`Backend::notify`], [`Backend::notified`]).

use async_trait::async_trait;
use handoff_task::TaskId;
use tokio::sync::broadcast;

use crate::backend::{Backend, Scope, writing};
use crate::commands::{TAKE, TAKE_FOR_TASK};
use crate::ops::commands;
use crate::{PeerStore, PostedCommand, StoreError, StoreSignal};

#[async_trait]
impl<B: Backend> PeerStore for B {
    async fn post_command(
        &self,
        task: &TaskId,
        target: &str,
        body: &str,
        at: i64,
    ) -> Result<i64, StoreError> {
        let signal = StoreSignal::CommandPosted {
            target: target.to_owned(),
        };
        let id = writing(self, async {
            let mut tx = self.begin(Scope::Plain).await?;
            let id = commands::post(&mut *tx, task, target, body, at).await?;
            B::notify(&mut tx, &signal).await?;
            tx.commit().await?;
            Ok(id)
        })
        .await?;
        self.notified(signal);
        Ok(id)
    }

    async fn take_commands(&self, target: &str, at: i64) -> Result<Vec<PostedCommand>, StoreError> {
        writing(self, async {
            commands::take(&mut *self.writer().await?, TAKE, target, at).await
        })
        .await
    }

    async fn take_task_commands(
        &self,
        task: &TaskId,
        at: i64,
    ) -> Result<Vec<PostedCommand>, StoreError> {
        writing(self, async {
            commands::take(&mut *self.writer().await?, TAKE_FOR_TASK, task.as_str(), at).await
        })
        .await
    }

    async fn withdraw_command(&self, id: i64) -> Result<bool, StoreError> {
        writing(self, async {
            commands::withdraw(&mut *self.writer().await?, id).await
        })
        .await
    }

    async fn reply_command(&self, id: i64, reply: &str, at: i64) -> Result<bool, StoreError> {
        let signal = StoreSignal::CommandReplied { id };
        let done = writing(self, async {
            let mut tx = self.begin(Scope::Plain).await?;
            let done = commands::reply(&mut *tx, id, reply, at).await?;
            B::notify(&mut tx, &signal).await?;
            tx.commit().await?;
            Ok(done)
        })
        .await?;
        self.notified(signal);
        Ok(done)
    }

    async fn command_reply(&self, id: i64) -> Result<Option<String>, StoreError> {
        commands::reply_of(&mut *self.reader().await?, id).await
    }

    async fn ran_on(&self, id: &TaskId) -> Result<Option<String>, StoreError> {
        commands::ran_on(&mut *self.reader().await?, id).await
    }

    async fn purge_commands(&self, before: i64) -> Result<u64, StoreError> {
        writing(self, async {
            commands::purge(&mut *self.writer().await?, before).await
        })
        .await
    }

    async fn broadcast(&self, body: &str) -> Result<(), StoreError> {
        self.send_broadcast(body).await
    }

    async fn signals(&self) -> Result<broadcast::Receiver<StoreSignal>, StoreError> {
        self.subscribe().await
    }
}
