//! The engine's command seam across instances: a command goes to this process's supervisor of
//! the run when there is one, else — on a shared store — to the instance holding the task's
//! live lease, through the store, and the caller waits for that instance's answer.

use std::time::Duration;

use async_trait::async_trait;
use handoff_task::{TaskId, unix_millis_now};
use tokio::time::Instant;

use super::wire::{Posted, WireCommand, WireReply};
use crate::{
    EngineError,
    state::EngineState,
    supervisor::{CommandReply, TaskCommand, TaskCommands},
};

/// How long a caller waits for the holding instance to answer (it answers within a store
/// round trip and its supervisor's reply; a holder that stays silent is presumed unreachable).
const REPLY_WAIT: Duration = Duration::from_secs(15);
/// How often a waiting caller re-reads the reply without a wake-up (a wake-up is lost while
/// the listening connection is re-made).
const REPLY_POLL: Duration = Duration::from_millis(500);

#[async_trait]
impl TaskCommands for EngineState {
    async fn send(
        &self,
        id: &TaskId,
        command: TaskCommand,
    ) -> Result<Option<CommandReply>, EngineError> {
        if let Some(reply) = self.supervisors.send(id, command.clone()).await? {
            return Ok(Some(reply));
        }
        match self.holder_elsewhere(id).await? {
            Some(holder) => self.send_to(&holder, id, &command).await,
            None => Ok(None),
        }
    }
}

impl EngineState {
    /// The other instance holding a live lease on active task `id`, on a shared store.
    async fn holder_elsewhere(&self, id: &TaskId) -> Result<Option<String>, EngineError> {
        if !self.store.is_shared() {
            return Ok(None);
        }
        let Some(task) = self.store.get_task(id).await? else {
            return Ok(None);
        };
        let now = unix_millis_now();
        Ok(task
            .lease
            .filter(|l| task.status.is_active() && l.owner != self.instance.id && l.until > now)
            .map(|l| l.owner))
    }

    /// Posts `command` for `holder` and waits for its answer.
    async fn send_to(
        &self,
        holder: &str,
        id: &TaskId,
        command: &TaskCommand,
    ) -> Result<Option<CommandReply>, EngineError> {
        let posted = Posted::Command(WireCommand::from(command));
        self.ask(holder, id, &posted)
            .await?
            .into_reply(self, id)
            .await
    }

    /// Posts `posted` about task `id` for instance `holder` and waits for its reply.
    pub(super) async fn ask(
        &self,
        holder: &str,
        id: &TaskId,
        posted: &Posted,
    ) -> Result<WireReply, EngineError> {
        let body = serde_json::to_string(posted)
            .map_err(|e| EngineError::Internal(format!("encoding a command: {e}")))?;
        let posted = self
            .store
            .post_command(id, holder, &body, unix_millis_now())
            .await?;
        tracing::debug!(task = %id, holder, command = posted, "posted to the holding instance");
        let deadline = Instant::now() + REPLY_WAIT;
        loop {
            let woken = self.peers.replied.notified();
            tokio::pin!(woken);
            // Registered before the read: a reply landing in between still wakes this wait.
            woken.as_mut().enable();
            if let Some(text) = self.store.command_reply(posted).await? {
                return serde_json::from_str(&text).map_err(|e| {
                    EngineError::Internal(format!("instance {holder} answered unreadably: {e}"))
                });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(EngineError::Unavailable(format!(
                    "instance {holder}, which holds task {id}, did not answer within {} s",
                    REPLY_WAIT.as_secs()
                )));
            }
            let _ = tokio::time::timeout((deadline - now).min(REPLY_POLL), woken).await;
        }
    }
}
