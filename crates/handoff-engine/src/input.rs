//! The permission relay: an executor's request is decided by the policy (hooks, rules,
//! standing approvals) when it allows or denies, and otherwise puts the task in
//! `input_required` until its owner answers (a `send_task_message` of type `approval`, an MCP
//! Tasks answer) or the ask timeout denies it — never left hanging. An owner's allow with scope
//! `task` or `project` becomes a standing approval of exactly the command parts or paths shown.

use std::sync::Arc;

use handoff_config::PermissionAction;
use handoff_runner::{Decision, InputAnswer, InputKind, InputRequest, RunControl, Scope};
use handoff_task::{
    AgentId, Approval, ApprovalScope, AuditRecord, EventKind, NewEvent, Task, TaskId, TaskStatus,
    unix_millis_now,
};
use serde_json::{Value, json};

use crate::{
    Engine, EngineError,
    engine::Inner,
    policy::{ExecutorDecision, granted_subjects},
};

/// Who settled a request.
#[derive(Debug, Clone)]
pub(crate) enum Answerer {
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

/// An executor asked; decide by policy or wait for the owner.
pub(crate) async fn requested(
    inner: &Arc<Inner>,
    task: &Task,
    control: &Arc<dyn RunControl>,
    request: InputRequest,
) -> Result<(), EngineError> {
    let decision = match request.kind {
        InputKind::Permission => {
            inner
                .policy
                .decide(inner.store.as_ref(), task, &request)
                .await?
        }
        InputKind::Question => ExecutorDecision {
            action: PermissionAction::Ask,
            stage: "question",
            reason: "questions need the owner's words".to_owned(),
            detail: json!({ "request_id": request.id }),
        },
    };
    audit(
        inner,
        task,
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
        PermissionAction::Ask => return wait_for_answer(inner, task, request).await,
    };
    deliver(
        inner,
        &task.id,
        control,
        &request,
        &answer,
        &Answerer::Policy(decision),
    )
    .await
}

/// Appends one executor decision to the audit trail (a failure is logged, never fatal: the
/// decision is also a task event).
async fn audit(
    inner: &Inner,
    task: &Task,
    request: &InputRequest,
    outcome: &str,
    stage: &str,
    reason: &str,
    detail: Value,
) {
    let record = AuditRecord {
        seq: 0,
        at: unix_millis_now(),
        agent_id: Some(task.agent_id.clone()),
        task_id: Some(task.id.clone()),
        source: "executor".to_owned(),
        subject: request.permission.clone(),
        outcome: outcome.to_owned(),
        stage: stage.to_owned(),
        reason: reason.to_owned(),
        detail,
    };
    if let Err(e) = inner.store.append_audit(&record).await {
        tracing::warn!(task = %task.id, error = %e, "could not write the audit record");
    }
}

async fn wait_for_answer(
    inner: &Arc<Inner>,
    task: &Task,
    request: InputRequest,
) -> Result<(), EngineError> {
    {
        let mut live = inner.live();
        let Some(run) = live.get_mut(&task.id) else {
            return Ok(());
        };
        run.pending.push(request.clone());
    }
    let timeout = inner.config.executors.ask_timeout;
    inner
        .record(
            &task.id,
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
    move_status(inner, &task.id, TaskStatus::InputRequired, &request.title).await?;
    let inner = inner.clone();
    let task_id = task.id.clone();
    let request_id = request.id.clone();
    tokio::spawn(async move {
        tokio::time::sleep(timeout).await;
        let answer = InputAnswer {
            request_id: Some(request_id),
            ..InputAnswer::deny(format!("no answer within {}s", timeout.as_secs()))
        };
        if let Err(e) = answer_pending(&inner, &task_id, answer, Answerer::Timeout).await {
            tracing::debug!(task = %task_id, error = %e, "ask timeout found nothing to deny");
        }
    });
    Ok(())
}

/// Answers a pending request of a live run (the one named, or the oldest); returns the request.
pub(crate) async fn answer_pending(
    inner: &Arc<Inner>,
    task_id: &TaskId,
    answer: InputAnswer,
    by: Answerer,
) -> Result<InputRequest, EngineError> {
    let (request, control) = {
        let mut live = inner.live();
        let run = live.get_mut(task_id).ok_or_else(|| {
            EngineError::Conflict("the task has no running executor to answer".to_owned())
        })?;
        let index = match &answer.request_id {
            Some(id) => run.pending.iter().position(|r| &r.id == id),
            None if run.pending.is_empty() => None,
            None => Some(0),
        };
        let Some(index) = index else {
            return Err(EngineError::Conflict(match &answer.request_id {
                Some(id) => format!("no pending request {id}"),
                None => "the task is not waiting for an answer".to_owned(),
            }));
        };
        check_widening(&run.pending[index], &answer)?;
        let control = run.control.clone().ok_or_else(|| {
            EngineError::Conflict("the task's executor is still starting".to_owned())
        })?;
        (run.pending.remove(index), control)
    };
    deliver(inner, task_id, &control, &request, &answer, &by).await?;
    if let Answerer::Agent(agent) = &by {
        grant(inner, task_id, agent, &request, &answer).await?;
    }
    let still_waiting = inner
        .live()
        .get(task_id)
        .is_some_and(|run| !run.pending.is_empty());
    if !still_waiting {
        move_status(inner, task_id, TaskStatus::Running, "input answered").await?;
    }
    Ok(request)
}

/// The executor settled a request itself (answered elsewhere, or withdrawn).
pub(crate) async fn settled(
    inner: &Arc<Inner>,
    task_id: &TaskId,
    id: &str,
) -> Result<(), EngineError> {
    let empty = {
        let mut live = inner.live();
        let Some(run) = live.get_mut(task_id) else {
            return Ok(());
        };
        let before = run.pending.len();
        run.pending.retain(|r| r.id != id);
        if run.pending.len() == before {
            return Ok(());
        }
        run.pending.is_empty()
    };
    if empty {
        move_status(
            inner,
            task_id,
            TaskStatus::Running,
            "request settled by the executor",
        )
        .await?;
    }
    Ok(())
}

async fn deliver(
    inner: &Arc<Inner>,
    task_id: &TaskId,
    control: &Arc<dyn RunControl>,
    request: &InputRequest,
    answer: &InputAnswer,
    by: &Answerer,
) -> Result<(), EngineError> {
    let sent = control.answer(request, answer).await;
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
    if !matches!(by, Answerer::Policy(_))
        && let Some(task) = inner.store.get_task(task_id).await?
    {
        let stage = match by {
            Answerer::Timeout => "timeout",
            _ => "owner",
        };
        let outcome = match answer.decision {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        };
        let detail = json!({ "request_id": request.id, "patterns": request.patterns, "scope": answer.scope, "by": by.to_string() });
        audit(
            inner,
            &task,
            request,
            outcome,
            stage,
            reason.as_deref().unwrap_or(""),
            detail,
        )
        .await;
    }
    inner
        .record(
            task_id,
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

/// An owner's allow for the task or the project becomes a standing approval of each command
/// part or path shown — never more than was shown.
async fn grant(
    inner: &Arc<Inner>,
    task_id: &TaskId,
    agent: &AgentId,
    request: &InputRequest,
    answer: &InputAnswer,
) -> Result<(), EngineError> {
    let scope = match (request.kind, answer.decision, answer.scope) {
        (InputKind::Permission, Decision::Allow, Scope::Task) => ApprovalScope::Task,
        (InputKind::Permission, Decision::Allow, Scope::Project) => ApprovalScope::Project,
        _ => return Ok(()),
    };
    let Some(task) = inner.store.get_task(task_id).await? else {
        return Ok(());
    };
    let project = inner.policy.project_of(&task);
    let mut ids = Vec::new();
    let patterns = if answer.patterns.is_empty() {
        granted_subjects(request)
    } else {
        answer.patterns.clone()
    };
    for pattern in patterns {
        let approval = Approval {
            id: format!("ap_{}", uuid::Uuid::new_v4().simple()),
            agent_id: agent.clone(),
            scope,
            task_id: task.id.clone(),
            project: project.clone(),
            permission: request.permission.clone(),
            pattern,
            created_at: unix_millis_now(),
        };
        inner.store.insert_approval(&approval).await?;
        ids.push(json!({ "id": approval.id, "pattern": approval.pattern }));
    }
    inner
        .record(
            task_id,
            NewEvent::new(
                EventKind::Input,
                format!(
                    "standing approval for {} ({} scope): {} — list_approvals shows it, revoke_approval removes it",
                    request.permission,
                    scope.as_str(),
                    ids.iter().filter_map(|v| v["pattern"].as_str()).collect::<Vec<_>>().join(", ")
                ),
            )
            .with_data(json!({ "approvals": ids, "scope": scope.as_str(), "state": "granted" })),
        )
        .await?;
    Ok(())
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

/// Moves between `running` and `input_required`; a task that moved on meanwhile (ended,
/// cancelled) is left alone.
async fn move_status(
    inner: &Arc<Inner>,
    task_id: &TaskId,
    to: TaskStatus,
    reason: &str,
) -> Result<(), EngineError> {
    let Some(current) = inner.store.get_task(task_id).await? else {
        return Ok(());
    };
    if current.status == to || !current.status.can_become(to) {
        return Ok(());
    }
    inner
        .change_status(&current, to, reason.to_owned(), None, None)
        .await?;
    Ok(())
}

impl Engine {
    /// Answers one of the task's pending requests (the oldest when the answer names none) —
    /// for callers that already hold a typed answer, such as an MCP Tasks `tasks/update`.
    pub async fn answer_input(
        &self,
        agent: &AgentId,
        id: &TaskId,
        answer: InputAnswer,
    ) -> Result<InputRequest, EngineError> {
        self.owned(agent, id).await?;
        answer_pending(&self.inner, id, answer, Answerer::Agent(agent.clone())).await
    }

    /// Answers the task's pending request with an approval message.
    pub(crate) async fn approve(
        &self,
        task: &Task,
        agent: &AgentId,
        message: &str,
    ) -> Result<InputRequest, EngineError> {
        let answer = parse_approval(message)?;
        answer_pending(
            &self.inner,
            &task.id,
            answer,
            Answerer::Agent(agent.clone()),
        )
        .await
    }
}

/// An approval message: the JSON answer, or a plain yes/no word.
fn parse_approval(message: &str) -> Result<InputAnswer, EngineError> {
    let trimmed = message.trim();
    match trimmed.to_ascii_lowercase().as_str() {
        "allow" | "yes" | "approve" | "approved" | "ok" => return Ok(InputAnswer::allow_once()),
        "deny" | "no" | "reject" | "rejected" => {
            return Ok(InputAnswer::deny("denied by the task's owner"));
        }
        _ => {}
    }
    serde_json::from_str(trimmed).map_err(|e| EngineError::Invalid {
        field: "message",
        message: format!(
            "an approval answers the pending request: JSON {{\"decision\": \"allow\"|\"deny\", \"scope\"?: \"once\"|\"task\"|\"project\", \"patterns\"?: [wildcards], \"message\"?: string, \"request_id\"?: string}} or the word allow/deny ({e})"
        ),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_runner::Scope;

    use super::*;

    #[test]
    fn approvals_parse_from_json_or_words() {
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
