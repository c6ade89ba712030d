//! An executor's permission or question request as an MCP elicitation form — one mapping for
//! the Tasks extension's `inputRequests` and for legacy `elicitation/create` requests; the
//! client's result is read back against the same form by [`super::answer`].

use handoff_runner::{InputKind, InputRequest};
use rmcp::model::ElicitRequestParams;
use serde_json::{Value, json};

/// Longest text shown in a form's message.
const MESSAGE_CHARS: usize = 1_000;
/// A permission form's `decision` values (the answer parser accepts exactly these).
pub(crate) const DECISIONS: &[&str] = &["allow", "deny"];
/// A permission form's `scope` values (the answer parser accepts exactly these).
pub(crate) const SCOPES: &[&str] = &["once", "task", "project"];

/// The form asking the task's owner about `request`.
pub(crate) fn form(task_id: &str, request: &InputRequest) -> ElicitRequestParams {
    let (message, schema) = match request.kind {
        InputKind::Permission => (permission_message(task_id, request), permission_schema()),
        InputKind::Question => question_form(task_id, request),
    };
    let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
    // The schemas above are fixed shapes of primitive properties, which rmcp always accepts;
    // the fallback only guards against a future rmcp tightening its parser.
    serde_json::from_value(params).unwrap_or_else(|error| {
        tracing::error!(%error, "elicitation form rejected by rmcp; sending a bare form");
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: clip(&request.title),
            requested_schema: rmcp::model::ElicitationSchema::new(Default::default()),
        }
    })
}

fn permission_message(task_id: &str, request: &InputRequest) -> String {
    let mut text = format!(
        "Task {task_id}: the coding agent asks for permission `{}`",
        request.permission
    );
    if !request.title.is_empty() {
        text.push_str(&format!(": {}", request.title));
    }
    if !request.patterns.is_empty() {
        text.push_str(&format!(" (on: {})", request.patterns.join(", ")));
    }
    clip(&text)
}

fn permission_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "description": "allow lets the coding agent go ahead; deny refuses",
                "enum": DECISIONS,
                "default": "allow"
            },
            "scope": {
                "type": "string",
                "title": "For how long",
                "description": "task also allows exactly these commands or paths for the rest of this task, project for every task of yours in the same project (list_approvals / revoke_approval)",
                "enum": SCOPES,
                "default": "once"
            },
            "message": {
                "type": "string",
                "title": "Message",
                "description": "Words for the coding agent (why it was refused, what to do instead)"
            }
        },
        "required": ["decision"]
    })
}

fn question_form(task_id: &str, request: &InputRequest) -> (String, Value) {
    let questions = request
        .detail
        .get("questions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let options: Vec<String> = questions
        .iter()
        .flat_map(|q| {
            q.get("options")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|o| {
            let label = o.get("label").and_then(Value::as_str)?;
            Some(match o.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{label} ({d})"),
                _ => label.to_owned(),
            })
        })
        .collect();
    let mut message = format!("Task {task_id}: the coding agent asks: {}", request.title);
    if !options.is_empty() {
        message.push_str(&format!(" Options: {}.", options.join(", ")));
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "answer": {
                "type": "string",
                "title": "Answer",
                "description": "Your answer, in words (an option's label, or anything else); leave it empty to take the first option"
            }
        }
    });
    (clip(&message), schema)
}

fn clip(text: &str) -> String {
    handoff_runner::clip(text, MESSAGE_CHARS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn request(kind: InputKind) -> InputRequest {
        InputRequest {
            id: "per_1".into(),
            kind,
            permission: if kind == InputKind::Permission {
                "bash".into()
            } else {
                "question".into()
            },
            patterns: vec!["touch approved.txt".into()],
            title: if kind == InputKind::Permission {
                "touch approved.txt".into()
            } else {
                "Which colour?".into()
            },
            detail: json!({"questions": [{"question": "Which colour?", "options": [
                {"label": "Red", "description": "warm"}, {"label": "Blue"}
            ]}]}),
        }
    }

    #[test]
    fn a_permission_becomes_a_form_with_a_decision() {
        let wire = serde_json::to_value(form("t1", &request(InputKind::Permission))).unwrap();
        assert_eq!(wire["mode"], "form");
        let message = wire["message"].as_str().unwrap();
        assert!(
            message.contains("t1") && message.contains("`bash`"),
            "{message}"
        );
        assert!(message.contains("touch approved.txt"), "{message}");
        let schema = &wire["requestedSchema"];
        assert_eq!(
            schema["properties"]["decision"]["enum"],
            json!(["allow", "deny"])
        );
        assert_eq!(
            schema["properties"]["scope"]["enum"],
            json!(["once", "task", "project"])
        );
        assert_eq!(schema["properties"]["message"]["type"], "string");
        assert_eq!(schema["required"], json!(["decision"]));
    }

    #[test]
    fn a_question_lists_its_options() {
        let wire = serde_json::to_value(form("t1", &request(InputKind::Question))).unwrap();
        let message = wire["message"].as_str().unwrap();
        assert!(message.contains("Which colour?"), "{message}");
        assert!(message.contains("Red (warm), Blue"), "{message}");
        assert_eq!(
            wire["requestedSchema"]["properties"]["answer"]["type"],
            "string"
        );
    }
}
