//! Codex's part in steering a thread (messages, pause and the stop itself are `agent_process`'s):
//! an interrupt of the running turn before the stop, approvals and answers as JSON-RPC
//! responses.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{INTERRUPT_GRACE, driver::Shared, protocol, session::Session};
use crate::{
    Decision, InputAnswer, InputKind, InputRequest,
    agent_process::{Link, Protocol, jsonrpc},
};

/// Codex's part of a run's control: follow-ups go out as `turn/start` once the thread exists,
/// a cancel interrupts the running turn.
#[async_trait]
impl Protocol for Shared {
    type Session = Session;

    const STOP_GRACE: Duration = INTERRUPT_GRACE;

    fn link(&self) -> &Link<Session> {
        self
    }

    async fn stop(&self) -> Option<String> {
        self.cancel();
        let running = self.session().running();
        // The turn ends, Codex closes the model stream, stdin closes, Codex exits.
        running.map(|(thread, turn)| protocol::interrupt(&thread, &turn))
    }

    fn answer(&self, rpc_id: &Value, request: &InputRequest, answer: &InputAnswer) -> String {
        let result = match request.kind {
            InputKind::Permission => json!({ "decision": decision(request, answer) }),
            InputKind::Question => json!({ "answers": answers(request, answer) }),
        };
        jsonrpc::response(rpc_id, result)
    }
}

/// `accept` or `decline` (the agent goes on without it; Codex has no field for the reason).
/// A longer-lived grant stays with Handoff (which answers the next request itself and can
/// revoke it), so Codex is never told `acceptForSession`.
fn decision(_request: &InputRequest, answer: &InputAnswer) -> &'static str {
    match answer.decision {
        Decision::Deny => "decline",
        Decision::Allow => "accept",
    }
}

/// One answer per question: the caller's words when given, else the first option (an "allow"
/// of a question means "go with the default"); a denial answers nothing.
fn answers(request: &InputRequest, answer: &InputAnswer) -> Value {
    let mut answers = serde_json::Map::new();
    if answer.decision == Decision::Deny {
        return Value::Object(answers);
    }
    let questions = request.detail.get("questions").and_then(Value::as_array);
    for question in questions.into_iter().flatten() {
        let Some(id) = question.get("id").and_then(Value::as_str) else {
            continue;
        };
        let chosen = answer.message.clone().or_else(|| {
            question
                .pointer("/options/0/label")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        answers.insert(
            id.to_owned(),
            json!({ "answers": chosen.into_iter().collect::<Vec<_>>() }),
        );
    }
    Value::Object(answers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Scope;

    fn request(method: &str, available: Value) -> InputRequest {
        InputRequest {
            id: "0".to_owned(),
            kind: InputKind::Permission,
            permission: "bash".to_owned(),
            patterns: vec!["touch x".to_owned()],
            title: String::new(),
            detail: json!({ "method": method, "rpc_id": 0, "available_decisions": available }),
        }
    }

    #[test]
    fn longer_grants_stay_with_handoff_so_codex_only_hears_accept() {
        let for_the_task = InputAnswer {
            scope: Scope::Task,
            ..InputAnswer::allow_once()
        };
        let command = "item/commandExecution/requestApproval";
        let offered = request(command, json!(["accept", "acceptForSession"]));
        assert_eq!(decision(&offered, &for_the_task), "accept");
        let patch = request("item/fileChange/requestApproval", Value::Null);
        assert_eq!(decision(&patch, &InputAnswer::allow_once()), "accept");
        assert_eq!(decision(&patch, &InputAnswer::deny("no")), "decline");
    }

    #[test]
    fn questions_get_the_callers_words_or_the_first_option() {
        let question = InputRequest {
            kind: InputKind::Question,
            detail: json!({ "questions": [
                {"id": "q1", "question": "Which?", "options": [{"label": "A", "description": ""}]}
            ]}),
            ..request("item/tool/requestUserInput", Value::Null)
        };
        assert_eq!(
            answers(&question, &InputAnswer::allow_once()),
            json!({"q1": {"answers": ["A"]}})
        );
        let words = InputAnswer {
            message: Some("B".to_owned()),
            ..InputAnswer::allow_once()
        };
        assert_eq!(
            answers(&question, &words),
            json!({"q1": {"answers": ["B"]}})
        );
        assert_eq!(answers(&question, &InputAnswer::deny("no")), json!({}));
    }
}
