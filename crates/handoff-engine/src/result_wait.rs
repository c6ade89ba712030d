//! Callers waiting inside their submitting call for a task's final result (`execute_task
//! {sync: true}`). Open waits live in memory: they end with the call, and so with the process.
//! Whether a wait handed the caller the final result is durable (the task's
//! `result_delivered_at`), and is stored before the wait ends: an integration that would tell
//! the caller what the result already says (Letta's completion message) holds back while a
//! wait is open, then asks the store.

use std::sync::Arc;

use handoff_task::{AgentId, TaskId, unix_millis_now};

use crate::{Engine, EngineError, SubmitRequest, Submitted, shared::Shared};

/// One caller waiting in its submitting call for a task's final result. Dropping it ends the
/// wait as "not delivered", unless [`ResultWait::delivered`] recorded the delivery first.
pub struct ResultWait {
    shared: Arc<Shared>,
    task: TaskId,
}

impl std::fmt::Debug for ResultWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultWait")
            .field("task", &self.task)
            .finish_non_exhaustive()
    }
}

impl ResultWait {
    pub(crate) fn open(shared: &Arc<Shared>, task: TaskId) -> Self {
        shared.result_waits.open(&task);
        Self {
            shared: shared.clone(),
            task,
        }
    }

    /// The task waited for.
    pub fn task(&self) -> &TaskId {
        &self.task
    }

    /// The final result goes back to the caller in this call: stores that, then ends the wait.
    pub async fn delivered(self) -> Result<(), EngineError> {
        self.shared
            .store
            .mark_result_delivered(&self.task, unix_millis_now())
            .await?;
        Ok(())
    }
}

impl Drop for ResultWait {
    fn drop(&mut self) {
        if self.shared.result_waits.close(&self.task) {
            self.shared.outbox.result_wait_ended(&self.task);
        }
    }
}

impl Engine {
    /// [`Engine::submit`] for a caller that waits in the same call for the final result. The
    /// wait is open before a new task is stored, so no integration acts on its end unawares.
    pub async fn submit_awaited(
        &self,
        agent: &AgentId,
        req: SubmitRequest,
    ) -> Result<(Submitted, ResultWait), EngineError> {
        let (submitted, wait) = self.submit_as(agent, req, true).await?;
        // An earlier task found by its idempotency key is waited for from now on.
        let wait = match wait {
            Some(wait) => wait,
            None => ResultWait::open(self.inner.shared(), submitted.task.id.clone()),
        };
        Ok((submitted, wait))
    }

    /// Whether a caller still waits in its submitting call for the task's final result.
    pub fn awaits_result(&self, id: &TaskId) -> bool {
        self.inner.result_waits.is_open(id)
    }
}
