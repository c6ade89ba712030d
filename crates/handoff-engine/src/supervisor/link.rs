//! The run driver's side of its supervisor: what the lifecycle reports (the executor is up,
//! it asked something, Handoff decided to stop it) and what it must have the supervisor do
//! (count a tool call or a Stop-hook block, hand over kept messages). What the driver only
//! reads — the stop decided, whether a Stop hook is active — it reads from the state the
//! supervisor publishes, without a message.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use handoff_policy::loop_guard::Step;
use handoff_runner::{Capabilities, InputRequest, RunControl};
use handoff_task::TaskId;
use tokio::sync::{mpsc, oneshot, watch};

use super::{actor::Msg, live::RunState};
use crate::{EngineError, finish::StopReason};

/// A handle on one run's supervisor, held by the run's driver.
#[derive(Clone)]
pub(crate) struct RunLink {
    id: TaskId,
    tx: mpsc::Sender<Msg>,
    live: watch::Receiver<RunState>,
    /// This driver asked for a stop: reading the stop waits until the supervisor took it in,
    /// so the driver never reads a state older than its own request.
    asked_stop: Arc<AtomicBool>,
}

fn gone() -> EngineError {
    EngineError::Internal("the run's supervisor stopped".to_owned())
}

impl RunLink {
    pub(super) fn new(id: TaskId, tx: mpsc::Sender<Msg>, live: watch::Receiver<RunState>) -> Self {
        Self {
            id,
            tx,
            live,
            asked_stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Resolves once Handoff decided to stop the run (cancel, deadline, shutdown…).
    pub(crate) async fn stopped(&self) {
        if self.stop_decided().await.is_err() {
            // A supervisor gone without a stop decides none any more.
            std::future::pending::<()>().await;
        }
    }

    /// Waits until the supervisor published a stop; an error once it is gone without one.
    async fn stop_decided(&self) -> Result<(), watch::error::RecvError> {
        let mut live = self.live.clone();
        live.wait_for(|state| state.stop.is_some()).await.map(drop)
    }

    /// Whether Handoff already decided to stop the run.
    pub(crate) fn is_stopped(&self) -> bool {
        self.live.borrow().stop.is_some()
    }

    /// The executor reported a tool call: the loop guard's step for it, if newly seen.
    pub(crate) async fn tool_call(&self, data: serde_json::Value) -> Option<(String, Step)> {
        let (reply, answer) = oneshot::channel();
        self.tx.send(Msg::ToolCall { data, reply }).await.ok()?;
        answer.await.ok().flatten()
    }

    /// Whether a Stop hook already refused this run's end.
    pub(crate) fn stop_hook_active(&self) -> bool {
        self.live.borrow().stop_hook_active
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
        if self.tx.send(Msg::Stop(reason)).await.is_ok() {
            self.asked_stop.store(true, Ordering::Release);
        }
    }

    /// The stop Handoff decided on, if any (a shutdown once the supervisor is gone without one).
    pub(crate) async fn stop_reason(&self) -> Option<StopReason> {
        if self.asked_stop.load(Ordering::Acquire) {
            // The request is in the mailbox: the supervisor decides a stop (its own or an earlier one).
            let _ = self.stop_decided().await;
        }
        let gone = self.live.has_changed().is_err();
        let stop = self.live.borrow().stop.clone();
        match stop {
            None if gone => Some(StopReason::Shutdown),
            stop => stop,
        }
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
