//! A client's elicitation result read strictly against the form Handoff sent
//! ([`super::elicit::form`]): anything the form does not allow is refused, so a permission is
//! only ever allowed by an explicit `"decision": "allow"`. Errors name the field and the
//! problem and never repeat what the client sent (at most a clipped unknown field name).

use handoff_protocol::tasks::{AnswerDecision, AnswerScope, ApprovalAnswer};
use handoff_runner::InputKind;
use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

use super::elicit::{DECISIONS, SCOPES};

/// Longest text an answer's `message` or `answer` may carry (as `send_task_message`'s).
const MAX_TEXT_BYTES: usize = 64 * 1024;
/// Longest unknown field name shown back in an error.
const NAME_CHARS: usize = 64;

/// Why an elicitation result does not answer its form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub(crate) struct BadAnswer {
    /// The offending field, as a path inside the result (`content.decision`).
    pub field: String,
    /// What is wrong, without the value.
    pub problem: String,
}

impl BadAnswer {
    fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// The answer a client's elicitation result gives to `kind` of request: accept → the form's
/// values, checked against the form; decline or cancel → a refusal that says so.
pub(crate) fn parse(kind: InputKind, result: &ElicitResult) -> Result<ApprovalAnswer, BadAnswer> {
    let refusal = |why: &str| Ok(ApprovalAnswer::deny().with_message(Some(why.to_owned())));
    match result.action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => return refusal("the task's owner declined"),
        // Cancel, and any action a later revision adds: never an allow.
        _ => return refusal("the task's owner cancelled the request"),
    }
    let fields = match &result.content {
        Some(Value::Object(fields)) => fields,
        Some(other) => {
            return Err(BadAnswer::new(
                "content",
                format!("must be the form's object, got {}", describe(other)),
            ));
        }
        None => {
            return Err(BadAnswer::new(
                "content",
                "missing: an accepted form carries its values",
            ));
        }
    };
    match kind {
        InputKind::Permission => permission(fields),
        InputKind::Question => question(fields),
    }
}

/// `{decision: "allow"|"deny", scope?: "once"|"task"|"project", message?: string}`.
fn permission(fields: &Map<String, Value>) -> Result<ApprovalAnswer, BadAnswer> {
    only_known(fields, &["decision", "scope", "message"])?;
    let decision = match choice(fields, "decision", DECISIONS)? {
        Some("allow") => AnswerDecision::Allow,
        Some("deny") => AnswerDecision::Deny,
        _ => {
            return Err(BadAnswer::new(
                "content.decision",
                format!("required: one of {}", DECISIONS.join(", ")),
            ));
        }
    };
    let scope = match choice(fields, "scope", SCOPES)? {
        Some("task") => AnswerScope::Task,
        Some("project") => AnswerScope::Project,
        _ => AnswerScope::Once,
    };
    Ok(ApprovalAnswer {
        decision,
        scope,
        message: text(fields, "message")?,
        request_id: None,
        patterns: Vec::new(),
    })
}

/// `{answer?: string}`: empty or absent takes the executor's first option.
fn question(fields: &Map<String, Value>) -> Result<ApprovalAnswer, BadAnswer> {
    only_known(fields, &["answer"])?;
    Ok(ApprovalAnswer {
        decision: AnswerDecision::Allow,
        scope: AnswerScope::Once,
        message: text(fields, "answer")?,
        request_id: None,
        patterns: Vec::new(),
    })
}

fn only_known(fields: &Map<String, Value>, known: &[&str]) -> Result<(), BadAnswer> {
    match fields.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(name) => Err(BadAnswer::new(
            format!("content.{}", clip(name)),
            format!("not a field of the form (it has {})", known.join(", ")),
        )),
    }
}

/// An optional enum field: exactly one of `allowed` (case and spacing as the form says), or
/// absent. `null` counts as absent: SDKs send it for fields left unset.
fn choice<'a>(
    fields: &Map<String, Value>,
    key: &str,
    allowed: &[&'a str],
) -> Result<Option<&'a str>, BadAnswer> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => {
            Ok(allowed.iter().copied().find(|a| a == s))
        }
        Some(other) => Err(BadAnswer::new(
            format!("content.{key}"),
            format!(
                "must be one of {} (exactly, lower case), got {}",
                allowed.join(", "),
                describe(other)
            ),
        )),
    }
}

/// An optional free-text field, trimmed; empty is absent.
fn text(fields: &Map<String, Value>, key: &str) -> Result<Option<String>, BadAnswer> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() > MAX_TEXT_BYTES => Err(BadAnswer::new(
            format!("content.{key}"),
            format!("is {} bytes; at most {MAX_TEXT_BYTES}", s.len()),
        )),
        Some(Value::String(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
        Some(other) => Err(BadAnswer::new(
            format!("content.{key}"),
            format!("must be a string, got {}", describe(other)),
        )),
    }
}

/// What a value is, without what it says.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Number(_) => "a number".to_owned(),
        Value::String(s) => format!("another string ({} chars)", s.chars().count()),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn clip(name: &str) -> String {
    handoff_runner::clip(name, NAME_CHARS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(action: ElicitationAction, content: Option<Value>) -> ElicitResult {
        let mut r = ElicitResult::new(action);
        r.content = content;
        r
    }

    fn accept(content: Value) -> ElicitResult {
        result(ElicitationAction::Accept, Some(content))
    }

    #[test]
    fn well_formed_answers_are_read() {
        let allow = parse(
            InputKind::Permission,
            &accept(json!({"decision": "allow", "scope": "task"})),
        )
        .unwrap();
        assert_eq!(
            (allow.decision, allow.scope),
            (AnswerDecision::Allow, AnswerScope::Task)
        );
        let project = parse(
            InputKind::Permission,
            &accept(json!({"decision": "allow", "scope": "project", "message": null})),
        )
        .unwrap();
        assert_eq!(project.scope, AnswerScope::Project);
        let once = parse(InputKind::Permission, &accept(json!({"decision": "allow"}))).unwrap();
        assert_eq!(
            (once.decision, once.scope),
            (AnswerDecision::Allow, AnswerScope::Once)
        );
        let deny = parse(
            InputKind::Permission,
            &accept(json!({"decision": "deny", "message": " not that file "})),
        )
        .unwrap();
        assert_eq!(deny.decision, AnswerDecision::Deny);
        assert_eq!(deny.message.as_deref(), Some("not that file"));
        for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
            for kind in [InputKind::Permission, InputKind::Question] {
                let refused = parse(kind, &result(action.clone(), None)).unwrap();
                assert_eq!(refused.decision, AnswerDecision::Deny);
            }
        }
        let answered = parse(InputKind::Question, &accept(json!({"answer": " Blue "}))).unwrap();
        assert_eq!(answered.decision, AnswerDecision::Allow);
        assert_eq!(answered.message.as_deref(), Some("Blue"));
        let first = parse(InputKind::Question, &accept(json!({}))).unwrap();
        assert_eq!(first.message, None);
        let empty = parse(InputKind::Question, &accept(json!({"answer": ""}))).unwrap();
        assert_eq!(empty.message, None);
    }

    /// Every malformed or negative-looking answer the hardening corpus sent, refused with the
    /// field named — none of them is read as an allow.
    #[test]
    fn anything_but_an_explicit_allow_or_deny_is_refused() {
        let cases: Vec<(Option<Value>, &str)> = vec![
            (None, "content"),
            (Some(json!({})), "content.decision"),
            (Some(json!({"decision": null})), "content.decision"),
            (Some(json!({"decision": "Deny"})), "content.decision"),
            (Some(json!({"decision": "DENY"})), "content.decision"),
            (Some(json!({"decision": "Allow"})), "content.decision"),
            (Some(json!({"decision": " allow"})), "content.decision"),
            (Some(json!({"decision": "perhaps"})), "content.decision"),
            (Some(json!({"decision": "no"})), "content.decision"),
            (Some(json!({"decision": "yes"})), "content.decision"),
            (Some(json!({"decision": ""})), "content.decision"),
            (Some(json!({"decision": false})), "content.decision"),
            (Some(json!({"decision": true})), "content.decision"),
            (Some(json!({"decision": 1})), "content.decision"),
            (Some(json!({"decision": ["allow"]})), "content.decision"),
            (
                Some(json!({"decision": {"allow": true}})),
                "content.decision",
            ),
            (
                Some(json!({"decision": "allow", "scope": "forever"})),
                "content.scope",
            ),
            (
                Some(json!({"decision": "allow", "scope": "always"})),
                "content.scope",
            ),
            (
                Some(json!({"decision": "allow", "scope": "Task"})),
                "content.scope",
            ),
            (
                Some(json!({"decision": "allow", "scope": 3})),
                "content.scope",
            ),
            (
                Some(json!({"decision": "deny", "message": 7})),
                "content.message",
            ),
            (
                Some(json!({"decision": "allow", "patterns": ["*"]})),
                "content.patterns",
            ),
            (
                Some(json!({"decision": "allow", "request_id": "per_2"})),
                "content.request_id",
            ),
            (Some(json!(["allow"])), "content"),
            (Some(json!("allow")), "content"),
            (Some(json!(false)), "content"),
            (Some(json!(null)), "content"),
        ];
        for (content, field) in cases {
            let shown = format!("{content:?}");
            let error = parse(
                InputKind::Permission,
                &result(ElicitationAction::Accept, content),
            )
            .unwrap_err();
            assert_eq!(error.field, field, "{shown}: {error}");
        }
    }

    #[test]
    fn malformed_question_answers_are_refused() {
        for (content, field) in [
            (None, "content"),
            (Some(json!({"answer": 3})), "content.answer"),
            (Some(json!({"answer": ["Red"]})), "content.answer"),
            (
                Some(json!({"answer": "Red", "decision": "allow"})),
                "content.decision",
            ),
            (Some(json!("Red")), "content"),
        ] {
            let error = parse(
                InputKind::Question,
                &result(ElicitationAction::Accept, content),
            )
            .unwrap_err();
            assert_eq!(error.field, field, "{error}");
        }
    }

    #[test]
    fn errors_never_repeat_the_value() {
        let huge = "Deny".repeat(100_000);
        let error = parse(InputKind::Permission, &accept(json!({"decision": huge}))).unwrap_err();
        let shown = error.to_string();
        assert!(!shown.contains("DenyDeny") && shown.len() < 200, "{shown}");
        let name = "x".repeat(10_000);
        let error = parse(
            InputKind::Permission,
            &accept(json!({"decision": "allow", name.clone(): 1})),
        )
        .unwrap_err();
        assert!(error.to_string().len() < 200, "{error}");
        let long = "m".repeat(MAX_TEXT_BYTES + 1);
        let error = parse(
            InputKind::Permission,
            &accept(json!({"decision": "deny", "message": long})),
        )
        .unwrap_err();
        assert_eq!(error.field, "content.message");
        assert!(error.to_string().len() < 200, "{error}");
    }
}
