//! Steering an ACP session: messages as the next `session/prompt`, permission answers as the
//! option the decision maps to, pause by freezing the run's cgroup (its process group when it
//! has none), `session/cancel` before the process group is stopped.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::Value;

use super::{CANCEL_GRACE, driver::Shared, protocol};
use crate::{Decision, InputAnswer, InputRequest, RunControl, RunnerError, fence::FenceTarget};

/// The [`RunControl`] of one ACP run.
pub(crate) struct AcpControl {
    shared: Arc<Shared>,
}

impl AcpControl {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

#[async_trait]
impl RunControl for AcpControl {
    async fn send_message(&self, message: &str) -> Result<(), RunnerError> {
        let line = self.shared.session().message(message)?;
        match line {
            Some(line) => self.shared.process.write_line(&line).await,
            // Goes out as the next turn, once the session exists and the running turn ended.
            None => Ok(()),
        }
    }

    async fn pause(&self) -> Result<(), RunnerError> {
        self.shared.process.pause().await
    }

    async fn resume(&self) -> Result<(), RunnerError> {
        self.shared.process.resume().await
    }

    async fn cancel(&self, grace: Duration) -> Result<(), RunnerError> {
        let running = self.shared.session().running();
        self.shared.cancel().await;
        if let Some(session) = running {
            let mut ended = self.shared.turn_ends();
            if self
                .shared
                .process
                .write_line(&protocol::cancel(&session))
                .await
                .is_ok()
            {
                // The agent ends the turn `cancelled`, stdin closes, the agent exits.
                let _ = tokio::time::timeout(CANCEL_GRACE, ended.changed()).await;
            }
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
        let rpc_id = request
            .detail
            .get("rpc_id")
            .cloned()
            .unwrap_or_else(|| Value::String(request.id.clone()));
        self.shared.session().answered(&rpc_id);
        if answer.decision == Decision::Deny {
            self.shared.denied();
        }
        let line = match option(request, answer) {
            Some(option) => protocol::selected(&rpc_id, &option),
            // No option says what Handoff decided: withdrawing the request refuses it.
            None => protocol::cancelled(&rpc_id),
        };
        self.shared.process.write_line(&line).await
    }
}

/// The option matching Handoff's decision: `allow_once` (a longer grant stays with Handoff,
/// which answers the next request itself and can revoke it) or `reject_once`, falling back to
/// the `always` variants when the agent offers only those.
fn option(request: &InputRequest, answer: &InputAnswer) -> Option<String> {
    let kinds: &[&str] = match answer.decision {
        Decision::Allow => &["allow_once", "allow_always"],
        Decision::Deny => &["reject_once", "reject_always"],
    };
    let options = request.detail.get("options").and_then(Value::as_array)?;
    kinds.iter().find_map(|kind| {
        options
            .iter()
            .find(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
            .and_then(|o| o.get("optionId").and_then(Value::as_str))
            .map(str::to_owned)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{InputKind, Scope};

    fn request(options: Value) -> InputRequest {
        InputRequest {
            id: "0".to_owned(),
            kind: InputKind::Permission,
            permission: "bash".to_owned(),
            patterns: vec!["touch x".to_owned()],
            title: String::new(),
            detail: json!({ "rpc_id": 0, "options": options }),
        }
    }

    #[test]
    fn decisions_map_to_the_once_options_and_fall_back_to_always() {
        let offered = request(json!([
            {"optionId": "once", "kind": "allow_once", "name": "Allow once"},
            {"optionId": "always", "kind": "allow_always", "name": "Always allow"},
            {"optionId": "reject", "kind": "reject_once", "name": "Reject"}
        ]));
        let for_the_task = InputAnswer {
            scope: Scope::Task,
            ..InputAnswer::allow_once()
        };
        assert_eq!(option(&offered, &for_the_task).as_deref(), Some("once"));
        assert_eq!(
            option(&offered, &InputAnswer::deny("no")).as_deref(),
            Some("reject")
        );
        let only_always = request(json!([
            {"optionId": "yes", "kind": "allow_always", "name": "Yes"},
            {"optionId": "never", "kind": "reject_always", "name": "Never"}
        ]));
        assert_eq!(
            option(&only_always, &InputAnswer::allow_once()).as_deref(),
            Some("yes")
        );
        assert_eq!(
            option(&only_always, &InputAnswer::deny("no")).as_deref(),
            Some("never")
        );
        assert_eq!(option(&request(json!([])), &InputAnswer::deny("no")), None);
    }
}
