//! The engine's command seam across instances: a command goes to this process's supervisor of
//! the run when there is one, else — on a shared store — to the instance holding the task's
//! live lease, through the store, and the caller waits for that instance's answer. A command
//! is a durable intent: when the caller stops waiting it is withdrawn in the same step unless
//! the holder took it already (then its answer is awaited), so it is never reported failed
//! and applied later; one the holder never took goes to whoever takes the task over.

use std::time::Duration;

use async_trait::async_trait;
use handoff_protocol::TaskCommand;
use handoff_task::{TaskId, unix_millis_now};
use tokio::time::Instant;

use super::wire::{Posted, WireReply};
use crate::{
    EngineError,
    state::EngineState,
    supervisor::{CommandReply, TaskCommands},
};

/// How long a caller waits at most for the holding instance to take a command (it takes it
/// within a store round trip; a holder that stays silent is presumed unreachable). Never
/// longer than a lease expiry: by then a live holder renewed its lease, and a dead one's
/// task is about to be taken over.
const REPLY_WAIT: Duration = Duration::from_secs(15);
/// How long a caller waits for the answer to a command its holder took: the holder is alive
/// and applying it.
const APPLY_WAIT: Duration = Duration::from_secs(30);
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
            Some(holder) => self.send_to(&holder, id, command).await,
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
        let me = self.instance.id();
        Ok(task
            .lease
            .filter(|l| task.status.is_active() && *l.owner != *me && l.until > now)
            .map(|l| l.owner))
    }

    /// Posts `command` for `holder` and waits for its answer.
    async fn send_to(
        &self,
        holder: &str,
        id: &TaskId,
        command: TaskCommand,
    ) -> Result<Option<CommandReply>, EngineError> {
        let posted = Posted::Command(command);
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
        let wait = REPLY_WAIT.min(self.config.instance.lease_expiry);
        let mut deadline = Instant::now() + wait;
        let mut taken = false;
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
                if taken {
                    return Err(EngineError::Internal(format!(
                        "instance {holder} took the command about task {id} but did not answer \
                         within {} s; get_task_status shows whether it was applied",
                        APPLY_WAIT.as_secs()
                    )));
                }
                if self.store.withdraw_command(posted).await? {
                    return Err(self.unreachable_holder(holder, id, wait).await);
                }
                // Taken meanwhile: the holder is applying it; its answer is awaited.
                taken = true;
                deadline = now + APPLY_WAIT;
            }
            let _ = tokio::time::timeout((deadline - now).min(REPLY_POLL), woken).await;
        }
    }

    /// The answer to a caller whose command the holder never took (withdrawn: nothing was
    /// changed): retry once the holder's lease has run out and another instance may take the
    /// task over, or the holder renewed it and answers again.
    async fn unreachable_holder(&self, holder: &str, id: &TaskId, waited: Duration) -> EngineError {
        let now = unix_millis_now();
        let until = match self.store.get_task(id).await {
            Ok(Some(task)) => task.lease.map_or(now, |l| l.until),
            _ => now,
        };
        let skew = crate::instance::millis(self.config.instance.clock_skew);
        let beat = crate::instance::millis(self.config.instance.heartbeat);
        let left = until.saturating_sub(now).max(0) + skew + beat;
        let retry_after = Duration::from_millis(u64::try_from(left).unwrap_or(0));
        EngineError::Unreachable {
            message: format!(
                "instance {holder}, which holds task {id}, did not answer within {} ms; the \
                 command was withdrawn and nothing was changed. Retry in {} ms: by then its \
                 holder has renewed its lease or another instance has taken the task over",
                waited.as_millis(),
                retry_after.as_millis()
            ),
            retry_after,
        }
    }
}
