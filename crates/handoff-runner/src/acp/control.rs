//! ACP's part in steering a session (messages, pause — freezing the run's cgroup, else its
//! process group — and the stop itself are `agent_process`'s): `session/cancel` before the
//! process group is stopped, permission answers as the option the decision maps to.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{CANCEL_GRACE, driver::Shared, protocol, session::Session};
use crate::{
    Decision, InputAnswer, InputRequest,
    agent_process::{Link, Protocol},
};

/// ACP's part of a run's control: messages wait for the session and the running turn, a
/// cancel withdraws the waiting permission requests and sends `session/cancel`.
#[async_trait]
impl Protocol for Shared {
    type Session = Session;

    const STOP_GRACE: Duration = CANCEL_GRACE;

    fn link(&self) -> &Link<Session> {
        &self.link
    }

    async fn stop(&self) -> Option<String> {
        let running = self.link.session().running();
        self.cancel().await;
        // The agent ends the turn `cancelled`, stdin closes, the agent exits.
        running.map(|session| protocol::cancel(&session))
    }

    fn answer(&self, rpc_id: &Value, request: &InputRequest, answer: &InputAnswer) -> String {
        self.link.session().answered(rpc_id);
        if answer.decision == Decision::Deny {
            self.denied();
        }
        match option(request, answer) {
            Some(option) => protocol::selected(rpc_id, &option),
            // No option says what Handoff decided: withdrawing the request refuses it.
            None => protocol::cancelled(rpc_id),
        }
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
