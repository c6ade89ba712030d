//! Steering a Claude Code process: follow-up messages and permission answers as stdin lines,
//! pause by signal, an interrupt before the stop.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::json;

use super::{INTERRUPT_GRACE, driver::Shared, user_line};
use crate::{Decision, InputAnswer, InputRequest, RunControl, RunnerError, fence::FenceTarget};

/// The [`RunControl`] of one Claude Code run.
pub(crate) struct ClaudeControl {
    shared: Arc<Shared>,
}

impl ClaudeControl {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

#[async_trait]
impl RunControl for ClaudeControl {
    async fn send_message(&self, message: &str) -> Result<(), RunnerError> {
        self.shared.prompted();
        self.shared.process.write_line(&user_line(message)).await
    }

    async fn pause(&self) -> Result<(), RunnerError> {
        self.shared.process.pause().await
    }

    async fn resume(&self) -> Result<(), RunnerError> {
        self.shared.process.resume().await
    }

    async fn cancel(&self, grace: Duration) -> Result<(), RunnerError> {
        self.shared.cancel();
        let interrupt = json!({ "type": "control_request", "request_id": "handoff_interrupt",
            "request": { "subtype": "interrupt" } });
        if self
            .shared
            .process
            .write_line(&interrupt.to_string())
            .await
            .is_ok()
        {
            tokio::time::sleep(INTERRUPT_GRACE).await;
        }
        self.shared.process.cancel(grace).await
    }

    fn fence_target(&self) -> Option<FenceTarget> {
        self.shared.process.fence_target()
    }

    async fn answer(
        &self,
        request: &InputRequest,
        answer: &InputAnswer,
    ) -> Result<(), RunnerError> {
        let decision = match answer.decision {
            Decision::Allow => json!({
                "behavior": "allow",
                "updatedInput": request.detail.get("input").cloned().unwrap_or_else(|| json!({})),
            }),
            Decision::Deny => json!({
                "behavior": "deny",
                "message": answer.message.clone().unwrap_or_else(|| "denied".to_owned()),
            }),
        };
        let line = json!({ "type": "control_response", "response": {
            "subtype": "success", "request_id": request.id, "response": decision,
        }});
        self.shared.process.write_line(&line.to_string()).await
    }
}
