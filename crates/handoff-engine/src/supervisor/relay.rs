//! The permission relay, run by the supervisor: an executor's request is decided by the
//! policy (hooks, rules, standing approvals) when it allows or denies, and otherwise is stored
//! and puts the task in `input_required` until its owner answers or the supervisor's ask
//! timer denies it — never left hanging. An owner's allow with scope `task` or `project`
//! becomes a standing approval of exactly the command parts or paths shown.

use handoff_config::PermissionAction;
use handoff_protocol::tasks::{AnswerDecision, AnswerScope, ApprovalAnswer};
use handoff_runner::{Decision, InputAnswer, InputKind, InputRequest, Scope};
use handoff_task::{
    AgentId, Approval, ApprovalScope, AuditRecord, EventKind, NewEvent, PendingInput, TaskStatus,
    unix_millis_now,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::actor::{Pending, Supervisor};
use crate::{
    EngineError,
    policy::{ExecutorDecision, granted_subjects},
};

/// Who settled a request.
#[derive(Debug, Clone)]
pub(super) enum Answerer {
    /// The policy: configured rules, hooks, standing approvals, the loop guard.
    Policy(ExecutorDecision),
    /// The task's owner.
    Agent(AgentId),
    /// Nobody answered in time.
    Timeout,
}

impl std::fmt::Display for Answerer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answerer::Policy(decision) => write!(f, "policy ({})", decision.stage),
            Answerer::Agent(agent) => write!(f, "{agent}"),
            Answerer::Timeout => f.write_str("timeout"),
        }
    }
}

impl Supervisor {
    /// An executor asked; decide by policy or wait for the owner.
    pub(super) async fn requested(&mut self, request: InputRequest) -> Result<(), EngineError> {
        let state = self.state.clone();
        let decision = match request.kind {
            InputKind::Permission if self.guard.denies(&request.permission) => ExecutorDecision {
                action: PermissionAction::Deny,
                stage: "loop_guard",
                reason: format!(
                    "loop guard: {} calls are denied after repeated identical calls; try another approach",
                    request.permission
                ),
                detail: json!({}),
            },
            InputKind::Permission => {
                state
                    .policy
                    .decide(state.store.as_ref(), &self.task, &request)
                    .await?
            }
            InputKind::Question => ExecutorDecision {
                action: PermissionAction::Ask,
                stage: "question",
                reason: "questions need the owner's words".to_owned(),
                detail: json!({ "request_id": request.id }),
            },
        };
        self.audit(
            &request,
            decision.action.as_str(),
            decision.stage,
            &decision.reason,
            decision.detail.clone(),
        )
        .await;
        let answer = match decision.action {
            PermissionAction::Allow => InputAnswer::allow_once(),
            PermissionAction::Deny => {
                InputAnswer::deny(format!("denied by Handoff: {}", decision.reason))
            }
            PermissionAction::Ask => return self.wait_for_answer(request).await,
        };
        self.deliver(&request, &answer, &Answerer::Policy(decision))
            .await
    }

    /// Stores the request, tells the owner, starts its ask timer.
    async fn wait_for_answer(&mut self, request: InputRequest) -> Result<(), EngineError> {
        let timeout = self.state.config.executors.ask_timeout;
        let now = unix_millis_now();
        let stored = PendingInput {
            task_id: self.task.id.clone(),
            request_id: request.id.clone(),
            request: serde_json::to_value(&request)
                .map_err(|e| EngineError::Internal(e.to_string()))?,
            asked_at: now,
            expires_at: now.saturating_add(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)),
        };
        self.state.store.put_input_request(&stored).await?;
        self.pending.push(Pending {
            request: request.clone(),
            expires: Instant::now() + timeout,
        });
        self.state
            .record(
                &self.task.id,
                NewEvent::new(
                    EventKind::Input,
                    format!(
                        "waiting for an answer: {} (answer with send_task_message type approval; denied after {}s)",
                        request.title,
                        timeout.as_secs()
                    ),
                )
                .with_data(json!({ "request": request, "state": "pending" })),
            )
            .await?;
        self.move_status(TaskStatus::InputRequired, &request.title)
            .await
    }

    /// Denies every request whose ask timer ran out.
    pub(super) async fn expire(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .pending
            .iter()
            .filter(|p| p.expires <= now)
            .map(|p| p.request.id.clone())
            .collect();
        let timeout = self.state.config.executors.ask_timeout.as_secs();
        for id in due {
            let answer = InputAnswer {
                request_id: Some(id),
                ..InputAnswer::deny(format!("no answer within {timeout}s"))
            };
            if let Err(e) = self.answer(answer, Answerer::Timeout).await {
                tracing::warn!(task = %self.task.id, error = %e, "ask timeout could not deny");
                // Never spin on a request that cannot be denied: forget it.
                self.pending.retain(|p| p.expires > now);
            }
        }
    }

    /// Answers a pending request (the one named, or the oldest); returns the request.
    pub(super) async fn answer(
        &mut self,
        answer: InputAnswer,
        by: Answerer,
    ) -> Result<InputRequest, EngineError> {
        let index = match &answer.request_id {
            Some(id) => self.pending.iter().position(|p| &p.request.id == id),
            None if self.pending.is_empty() => None,
            None => Some(0),
        };
        let Some(index) = index else {
            return Err(EngineError::Conflict(match &answer.request_id {
                Some(id) => format!("no pending request {id}"),
                None => "the task is not waiting for an answer".to_owned(),
            }));
        };
        check_widening(&self.pending[index].request, &answer)?;
        if self.control.is_none() {
            return Err(EngineError::Conflict(
                "the task's executor is still starting".to_owned(),
            ));
        }
        let request = self.pending.remove(index).request;
        self.state
            .store
            .delete_input_request(&self.task.id, &request.id)
            .await?;
        self.deliver(&request, &answer, &by).await?;
        if let Answerer::Agent(agent) = &by {
            self.grant(agent, &request, &answer).await?;
        }
        if self.pending.is_empty() {
            self.move_status(TaskStatus::Running, "input answered")
                .await?;
        }
        Ok(request)
    }

    /// The executor settled a request itself (answered elsewhere, or withdrawn).
    pub(super) async fn settled(&mut self, id: &str) -> Result<(), EngineError> {
        let before = self.pending.len();
        self.pending.retain(|p| p.request.id != id);
        if self.pending.len() == before {
            return Ok(());
        }
        self.state
            .store
            .delete_input_request(&self.task.id, id)
            .await?;
        if self.pending.is_empty() {
            self.move_status(TaskStatus::Running, "request settled by the executor")
                .await?;
        }
        Ok(())
    }

    async fn deliver(
        &self,
        request: &InputRequest,
        answer: &InputAnswer,
        by: &Answerer,
    ) -> Result<(), EngineError> {
        let sent = match &self.control {
            Some(control) => control.answer(request, answer).await,
            None => Err(handoff_runner::RunnerError::Finished),
        };
        let verb = match answer.decision {
            Decision::Allow => "allowed",
            Decision::Deny => "denied",
        };
        let mut message = format!("{verb} by {by}: {}", request.title);
        let reason = match by {
            Answerer::Policy(decision) => Some(decision.reason.clone()),
            Answerer::Agent(_) | Answerer::Timeout => answer.message.clone(),
        };
        if let (Answerer::Policy(_), Some(reason)) = (by, &reason) {
            message.push_str(&format!(" — {reason}"));
        }
        if let Err(e) = &sent {
            message.push_str(&format!(" (the executor did not take the answer: {e})"));
        }
        if !matches!(by, Answerer::Policy(_)) {
            let stage = match by {
                Answerer::Timeout => "timeout",
                _ => "owner",
            };
            let outcome = match answer.decision {
                Decision::Allow => "allow",
                Decision::Deny => "deny",
            };
            let detail = json!({ "request_id": request.id, "patterns": request.patterns, "scope": answer.scope, "by": by.to_string() });
            self.audit(
                request,
                outcome,
                stage,
                reason.as_deref().unwrap_or(""),
                detail,
            )
            .await;
        }
        self.state
            .record(
                &self.task.id,
                NewEvent::new(EventKind::Input, message).with_data(json!({
                    "request": request,
                    "state": "answered",
                    "decision": answer.decision,
                    "scope": answer.scope,
                    "message": answer.message,
                    "by": by.to_string(),
                    "reason": reason,
                    "delivered": sent.is_ok(),
                })),
            )
            .await?;
        Ok(())
    }

    /// Appends one executor decision to the audit trail (a failure is logged, never fatal:
    /// the decision is also a task event).
    async fn audit(
        &self,
        request: &InputRequest,
        outcome: &str,
        stage: &str,
        reason: &str,
        detail: Value,
    ) {
        let record = AuditRecord {
            seq: 0,
            at: unix_millis_now(),
            agent_id: Some(self.task.agent_id.clone()),
            task_id: Some(self.task.id.clone()),
            source: "executor".to_owned(),
            subject: request.permission.clone(),
            outcome: outcome.to_owned(),
            stage: stage.to_owned(),
            reason: reason.to_owned(),
            detail,
        };
        if let Err(e) = self.state.store.append_audit(&record).await {
            tracing::warn!(task = %self.task.id, error = %e, "could not write the audit record");
        }
    }

    /// An owner's allow for the task or the project becomes a standing approval of each
    /// command part or path shown — never more than was shown.
    async fn grant(
        &self,
        agent: &AgentId,
        request: &InputRequest,
        answer: &InputAnswer,
    ) -> Result<(), EngineError> {
        let scope = match (request.kind, answer.decision, answer.scope) {
            (InputKind::Permission, Decision::Allow, Scope::Task) => ApprovalScope::Task,
            (InputKind::Permission, Decision::Allow, Scope::Project) => ApprovalScope::Project,
            _ => return Ok(()),
        };
        let project = self.state.policy.project_of(&self.task);
        let patterns = if answer.patterns.is_empty() {
            granted_subjects(request)
        } else {
            answer.patterns.clone()
        };
        let mut ids = Vec::new();
        for pattern in patterns {
            let approval = Approval {
                id: format!("ap_{}", uuid::Uuid::new_v4().simple()),
                agent_id: agent.clone(),
                scope,
                task_id: self.task.id.clone(),
                project: project.clone(),
                permission: request.permission.clone(),
                pattern,
                created_at: unix_millis_now(),
            };
            self.state.store.insert_approval(&approval).await?;
            ids.push(json!({ "id": approval.id, "pattern": approval.pattern }));
        }
        let shown: Vec<_> = ids.iter().filter_map(|v| v["pattern"].as_str()).collect();
        let message = format!(
            "standing approval for {} ({} scope): {} — list_approvals shows it, revoke_approval removes it",
            request.permission,
            scope.as_str(),
            shown.join(", ")
        );
        self.state
            .record(
                &self.task.id,
                NewEvent::new(EventKind::Input, message).with_data(
                    json!({ "approvals": ids, "scope": scope.as_str(), "state": "granted" }),
                ),
            )
            .await?;
        Ok(())
    }

    /// Moves between `running` and `input_required`; a task that moved on meanwhile (ended,
    /// cancelled, paused) is left alone.
    async fn move_status(&self, to: TaskStatus, reason: &str) -> Result<(), EngineError> {
        let current = self.current().await?;
        if current.status == to || !current.status.can_become(to) {
            return Ok(());
        }
        self.state
            .change_status(&current, to, reason.to_owned(), None, None)
            .await?;
        Ok(())
    }
}

/// An approval may name wildcards instead of the exact commands or paths shown, each covering
/// at least one of them: the owner widens deliberately, never to something unrelated.
fn check_widening(request: &InputRequest, answer: &InputAnswer) -> Result<(), EngineError> {
    if answer.patterns.is_empty() {
        return Ok(());
    }
    if answer.scope == Scope::Once || request.kind != InputKind::Permission {
        return Err(EngineError::invalid(
            "message",
            "patterns only apply to a permission approved with scope task or project",
        ));
    }
    let shown = granted_subjects(request);
    for pattern in &answer.patterns {
        let covers = shown.iter().any(|subject| {
            handoff_policy::permissions::pattern_covers(&request.permission, pattern, subject, None)
        });
        if !covers {
            return Err(EngineError::invalid(
                "message",
                format!(
                    "pattern `{pattern}` covers none of the requested {} ({})",
                    request.permission,
                    shown.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// An approval message: the JSON answer, or a plain yes/no word.
pub(crate) fn parse_approval(message: &str) -> Result<ApprovalAnswer, EngineError> {
    let trimmed = message.trim();
    match trimmed.to_ascii_lowercase().as_str() {
        "allow" | "yes" | "approve" | "approved" | "ok" => {
            return Ok(ApprovalAnswer::allow(AnswerScope::Once));
        }
        "deny" | "no" | "reject" | "rejected" => {
            return Ok(
                ApprovalAnswer::deny().with_message(Some("denied by the task's owner".into()))
            );
        }
        _ => {}
    }
    ApprovalAnswer::from_message(trimmed).map_err(|e| EngineError::Invalid {
            field: "message",
            message: format!(
                "an approval answers the pending request: JSON {{\"decision\": \"allow\"|\"deny\", \"scope\"?: \"once\"|\"task\"|\"project\", \"patterns\"?: [wildcards], \"message\"?: string, \"request_id\"?: string}} or the word allow/deny ({e})"
            ),
        })
}

/// The owner's answer (the protocol's, as commands carry it) as the runner takes it.
pub(super) fn input_answer(answer: ApprovalAnswer) -> InputAnswer {
    InputAnswer {
        decision: match answer.decision {
            AnswerDecision::Allow => Decision::Allow,
            AnswerDecision::Deny => Decision::Deny,
        },
        scope: match answer.scope {
            AnswerScope::Once => Scope::Once,
            AnswerScope::Task => Scope::Task,
            AnswerScope::Project => Scope::Project,
        },
        message: answer.message,
        request_id: answer.request_id,
        patterns: answer.patterns,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_runner::Scope;

    use super::*;

    #[test]
    fn approvals_parse_from_json_or_words() {
        // As the runner receives them.
        let parse_approval = |message| parse_approval(message).map(input_answer);
        let a = parse_approval(r#"{"decision":"allow","scope":"always"}"#).unwrap();
        assert_eq!((a.decision, a.scope), (Decision::Allow, Scope::Task));
        let p = parse_approval(r#"{"decision":"allow","scope":"project"}"#).unwrap();
        assert_eq!(p.scope, Scope::Project);
        let d = parse_approval(r#"{"decision":"deny","message":"not there"}"#).unwrap();
        assert_eq!(d.decision, Decision::Deny);
        assert_eq!(d.message.as_deref(), Some("not there"));
        assert_eq!(parse_approval(" Yes ").unwrap().decision, Decision::Allow);
        assert_eq!(parse_approval("no").unwrap().decision, Decision::Deny);
        let err = parse_approval(r#"{"decision":"maybe"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("message: an approval"), "{err}");
        assert!(parse_approval(r#"{"decision":"allow","extra":1}"#).is_err());
    }
}
