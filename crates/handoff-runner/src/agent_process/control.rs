//! The [`RunControl`] of any agent run: messages through the conversation, pause and resume
//! of the process (its cgroup, else its group), a request to stop the running turn before the
//! process is stopped, answers as lines of the agent's protocol.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::Value;

use super::link::{Conversation, Link};
use crate::{InputAnswer, InputRequest, RunControl, RunnerError, fence::FenceTarget};

/// What one agent protocol adds to the shared control.
#[async_trait]
pub(crate) trait Protocol: Send + Sync + 'static {
    /// The conversation the run tracks.
    type Session: Conversation;

    /// How long after the stop request the agent gets to end its turn before it is signalled.
    const STOP_GRACE: Duration;

    /// The run's shared half.
    fn link(&self) -> &Link<Self::Session>;

    /// Marks the run as being cancelled; the line asking the agent to stop its running turn,
    /// when one runs.
    async fn stop(&self) -> Option<String>;

    /// The line answering the agent's request `rpc_id` with Handoff's `answer`.
    fn answer(&self, rpc_id: &Value, request: &InputRequest, answer: &InputAnswer) -> String;
}

/// The [`RunControl`] of one agent run.
pub(crate) struct AgentControl<P> {
    shared: Arc<P>,
}

impl<P: Protocol> AgentControl<P> {
    pub fn new(shared: Arc<P>) -> Self {
        Self { shared }
    }
}

#[async_trait]
impl<P: Protocol> RunControl for AgentControl<P> {
    async fn send_message(&self, message: &str) -> Result<(), RunnerError> {
        let link = self.shared.link();
        let line = link.session().message(message)?;
        match line {
            Some(line) => link.process.write_line(&line).await,
            // Goes out once the conversation is ready for it.
            None => Ok(()),
        }
    }

    async fn pause(&self) -> Result<(), RunnerError> {
        self.shared.link().process.pause().await
    }

    async fn resume(&self) -> Result<(), RunnerError> {
        self.shared.link().process.resume().await
    }

    async fn cancel(&self, grace: Duration) -> Result<(), RunnerError> {
        let link = self.shared.link();
        if let Some(stop) = self.shared.stop().await {
            let mut ended = link.turn_ends();
            if link.process.write_line(&stop).await.is_ok() {
                // The turn ends, stdin closes, the agent exits.
                let _ = tokio::time::timeout(P::STOP_GRACE, ended.changed()).await;
            }
        }
        link.process.cancel(grace).await
    }

    fn fence_target(&self) -> Option<FenceTarget> {
        self.shared.link().process.fence_target()
    }

    async fn answer(
        &self,
        request: &InputRequest,
        answer: &InputAnswer,
    ) -> Result<(), RunnerError> {
        let rpc_id = request
            .detail
            .get("rpc_id")
            .cloned()
            .unwrap_or_else(|| Value::String(request.id.clone()));
        let line = self.shared.answer(&rpc_id, request, answer);
        self.shared.link().process.write_line(&line).await
    }
}
