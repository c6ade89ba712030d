//! Steering a Codex thread: follow-up messages as `turn/start` (Codex folds them into a running
//! turn), approvals and answers as JSON-RPC responses, pause by signal, an interrupt before the
//! stop.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{INTERRUPT_GRACE, driver::Shared, protocol};
use crate::{
    Decision, InputAnswer, InputKind, InputRequest, RunControl, RunnerError, fence::FenceTarget,
};

/// The [`RunControl`] of one Codex run.
pub(crate) struct CodexControl {
    shared: Arc<Shared>,
}

impl CodexControl {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

#[async_trait]
impl RunControl for CodexControl {
    async fn send_message(&self, message: &str) -> Result<(), RunnerError> {
        let line = self.shared.session().message(message)?;
        match line {
            Some(line) => self.shared.process.write_line(&line).await,
            // Goes out with the prompt once the thread exists.
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
        self.shared.cancel();
        let running = self.shared.session().running();
        if let Some((thread, turn)) = running {
            let mut ended = self.shared.turn_ends();
            let interrupt = protocol::interrupt(&thread, &turn);
            if self.shared.process.write_line(&interrupt).await.is_ok() {
                // The turn ends, Codex closes the model stream, stdin closes, Codex exits.
                let _ = tokio::time::timeout(INTERRUPT_GRACE, ended.changed()).await;
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
        let result = match request.kind {
            InputKind::Permission => json!({ "decision": decision(request, answer) }),
            InputKind::Question => json!({ "answers": answers(request, answer) }),
        };
        self.shared
            .process
            .write_line(&protocol::response(&rpc_id, result))
            .await
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
