//! Steering an OpenCode session: follow-up prompts, answers to its requests, abort.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::Value;

use super::session::Shared;
use crate::{Decision, InputAnswer, InputKind, InputRequest, RunControl, RunnerError};

/// Time beyond the grace period for the run to report its end after an abort.
const SETTLE: Duration = Duration::from_secs(5);

/// The [`RunControl`] of one OpenCode session.
pub(crate) struct OpenCodeControl {
    shared: Arc<Shared>,
}

impl OpenCodeControl {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    fn finished(&self) -> bool {
        *self.shared.done.borrow()
    }
}

fn unsupported(action: &'static str) -> RunnerError {
    RunnerError::Unsupported {
        executor: super::NAME.to_owned(),
        action,
    }
}

#[async_trait]
impl RunControl for OpenCodeControl {
    async fn send_message(&self, message: &str) -> Result<(), RunnerError> {
        if self.finished() {
            return Err(RunnerError::Finished);
        }
        // A prompt into a busy session joins its next model call.
        self.shared
            .client
            .prompt(&self.shared.session, message, None)
            .await
    }

    async fn pause(&self) -> Result<(), RunnerError> {
        Err(unsupported("pause"))
    }

    async fn resume(&self) -> Result<(), RunnerError> {
        Err(unsupported("resume"))
    }

    async fn cancel(&self, grace: Duration) -> Result<(), RunnerError> {
        if self.finished() {
            return Ok(());
        }
        self.shared.cancel();
        if let Err(e) = self.shared.client.abort(&self.shared.session).await {
            tracing::warn!(error = %e, "aborting the OpenCode session failed");
        }
        let mut done = self.shared.done.subscribe();
        let _ = tokio::time::timeout(grace + SETTLE, done.wait_for(|d| *d)).await;
        Ok(())
    }

    async fn answer(
        &self,
        request: &InputRequest,
        answer: &InputAnswer,
    ) -> Result<(), RunnerError> {
        if self.finished() {
            return Err(RunnerError::Finished);
        }
        let client = &self.shared.client;
        match (request.kind, answer.decision) {
            (InputKind::Permission, decision) => {
                // A longer-lived grant stays with Handoff, which answers the next request
                // itself and can revoke it: OpenCode only ever hears "once".
                let reply = match decision {
                    Decision::Deny => "reject",
                    Decision::Allow => "once",
                };
                client
                    .reply_permission(&request.id, reply, answer.message.as_deref())
                    .await
            }
            (InputKind::Question, Decision::Deny) => client.reject_question(&request.id).await,
            (InputKind::Question, Decision::Allow) => {
                client
                    .reply_question(
                        &request.id,
                        question_answers(request, answer.message.as_deref()),
                    )
                    .await
            }
        }
    }
}

/// One answer per question: the caller's words when given, else each question's first option
/// (an "allow" of a question means "go with the default").
fn question_answers(request: &InputRequest, message: Option<&str>) -> Vec<Vec<String>> {
    let questions = request
        .detail
        .get("questions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    questions
        .iter()
        .map(|q| match message {
            Some(text) => vec![text.to_owned()],
            None => q
                .pointer("/options/0/label")
                .and_then(Value::as_str)
                .map(|l| vec![l.to_owned()])
                .unwrap_or_default(),
        })
        .collect()
}
