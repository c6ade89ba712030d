//! The run driver's side of its supervisor: what the lifecycle reports (the executor is up,
//! it asked something, Handoff decided to stop it) and asks (was a stop decided?).

use std::sync::Arc;

use handoff_policy::loop_guard::Step;
use handoff_runner::{Capabilities, InputRequest, RunControl};
use handoff_task::TaskId;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::actor::Msg;
use crate::{EngineError, finish::StopReason};

/// A handle on one run's supervisor, held by the run's driver.
#[derive(Clone)]
pub(crate) struct RunLink {
    id: TaskId,
    tx: mpsc::Sender<Msg>,
    stopped: CancellationToken,
}

fn gone() -> EngineError {
    EngineError::Internal("the run's supervisor stopped".to_owned())
}

impl RunLink {
    pub(super) fn new(id: TaskId, tx: mpsc::Sender<Msg>, stopped: CancellationToken) -> Self {
        Self { id, tx, stopped }
    }

    /// Resolves once Handoff decided to stop the run (cancel, deadline, shutdown…).
    pub(crate) async fn stopped(&self) {
        self.stopped.cancelled().await;
    }

    /// Whether Handoff already decided to stop the run.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.is_cancelled()
    }

    /// The executor reported a tool call: the loop guard's step for it, if newly seen.
    pub(crate) async fn tool_call(&self, data: serde_json::Value) -> Option<(String, Step)> {
        let (reply, answer) = oneshot::channel();
        self.tx.send(Msg::ToolCall { data, reply }).await.ok()?;
        answer.await.ok().flatten()
    }

    /// Whether a Stop hook already refused this run's end.
    pub(crate) async fn stop_hook_active(&self) -> bool {
        let (reply, answer) = oneshot::channel();
        if self.tx.send(Msg::StopHookActive(reply)).await.is_err() {
            return false;
        }
        answer.await.unwrap_or(false)
    }

    /// Counts a Stop-hook block; whether the task may still be continued under `cap` blocks.
    pub(crate) async fn stop_block(&self, cap: u32) -> bool {
        let (reply, answer) = oneshot::channel();
        if self.tx.send(Msg::StopBlock { cap, reply }).await.is_err() {
            return false;
        }
        answer.await.unwrap_or(false)
    }

    /// The run ended normally and is being evaluated: messages from now on are kept for the
    /// evaluator, which resumes the session with them.
    pub(crate) async fn evaluating(&self) {
        let _ = self.tx.send(Msg::Evaluating).await;
    }

    /// The messages kept since the run ended, oldest first (taken: each is handed over once).
    pub(crate) async fn take_messages(&self) -> Vec<String> {
        self.messages(false).await
    }

    /// The evaluator reached its outcome: the messages still kept (then the evaluation goes on
    /// with them), or none — and from then on messages are refused, the outcome is final.
    pub(crate) async fn conclude(&self) -> Vec<String> {
        self.messages(true).await
    }

    async fn messages(&self, conclude: bool) -> Vec<String> {
        let (reply, answer) = oneshot::channel();
        if self
            .tx
            .send(Msg::Messages { conclude, reply })
            .await
            .is_err()
        {
            return Vec::new();
        }
        answer.await.unwrap_or_default()
    }

    /// The executor is up: `control` steers it from now on (and stops it at once when Handoff
    /// already decided to).
    pub(crate) async fn attach(&self, control: Arc<dyn RunControl>, capabilities: Capabilities) {
        let msg = Msg::Attach {
            control: control.clone(),
            capabilities,
        };
        if self.tx.send(msg).await.is_err() {
            // No supervisor left to carry out a stop: nobody may keep this run going.
            let _ = control.cancel(std::time::Duration::from_secs(5)).await;
        }
    }

    /// Handoff decided to stop the run (deadline, loop guard): the first decision stands.
    pub(crate) async fn stop(&self, reason: StopReason) {
        let _ = self.tx.send(Msg::Stop(reason)).await;
    }

    /// The stop Handoff decided on, if any.
    pub(crate) async fn stop_reason(&self) -> Option<StopReason> {
        let (reply, answer) = oneshot::channel();
        if self.tx.send(Msg::StopReason(reply)).await.is_err() {
            return Some(StopReason::Shutdown);
        }
        answer.await.unwrap_or(Some(StopReason::Shutdown))
    }

    /// The executor asks for a permission or the owner's words.
    pub(crate) async fn requested(&self, request: InputRequest) -> Result<(), EngineError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::Requested { request, reply })
            .await
            .map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// The executor settled request `id` itself (answered elsewhere, or withdrawn).
    pub(crate) async fn settled(&self, id: String) -> Result<(), EngineError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::Settled { id, reply })
            .await
            .map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// The run is over: no command reaches the supervisor any more; it answers what it still
    /// holds and stops.
    pub(crate) async fn end(&self, supervisors: &super::Supervisors) {
        supervisors.remove(&self.id, &self.tx);
        let _ = self.tx.send(Msg::Ended).await;
    }
}
