//! The answer to an executor's pending permission request, as `send_task_message` carries it:
//! `message_type: "approval"` with this object, as JSON, in `message`.

use serde::{Deserialize, Serialize};

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerDecision {
    /// Let the executor go ahead.
    Allow,
    /// Refuse; the agent is told why when there is a message.
    Deny,
}

/// For how long an allow holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerScope {
    /// This request only.
    #[default]
    Once,
    /// The same permission and subjects for the rest of the task (`always` reads as this).
    #[serde(alias = "always")]
    Task,
    /// The same permission and subjects in the agent's tasks in this project, until revoked.
    Project,
}

/// One answer to one pending request (the oldest when `request_id` is absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    /// Allow or deny.
    pub decision: AnswerDecision,
    /// For how long an allow holds.
    #[serde(default)]
    pub scope: AnswerScope,
    /// Words for the agent: why it was denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Which pending request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// With scope task or project: wildcards approved instead of exactly what was asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
}

impl ApprovalAnswer {
    /// An allow for `scope`.
    pub fn allow(scope: AnswerScope) -> Self {
        Self {
            decision: AnswerDecision::Allow,
            scope,
            message: None,
            request_id: None,
            patterns: Vec::new(),
        }
    }

    /// A refusal.
    pub fn deny() -> Self {
        Self {
            decision: AnswerDecision::Deny,
            ..Self::allow(AnswerScope::Once)
        }
    }

    /// The same answer for the request `id` (the oldest pending one when `None`).
    pub fn for_request(mut self, id: Option<String>) -> Self {
        self.request_id = id;
        self
    }

    /// The same answer with words for the agent.
    pub fn with_message(mut self, message: Option<String>) -> Self {
        self.message = message;
        self
    }

    /// The text of `send_task_message`'s `message`.
    pub fn to_message(&self) -> String {
        // A struct of strings and unit enums always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a `message` sent with `message_type: "approval"` as JSON.
    pub fn from_message(message: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(message.trim())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answers_round_trip_and_read_strictly() {
        let allow = ApprovalAnswer {
            patterns: vec!["ls *".into()],
            ..ApprovalAnswer::allow(AnswerScope::Project).for_request(Some("per_1".into()))
        };
        let text = allow.to_message();
        assert_eq!(
            text,
            r#"{"decision":"allow","scope":"project","request_id":"per_1","patterns":["ls *"]}"#
        );
        assert_eq!(ApprovalAnswer::from_message(&text).unwrap(), allow);
        let deny = ApprovalAnswer::deny().with_message(Some("not there".into()));
        assert_eq!(
            deny.to_message(),
            r#"{"decision":"deny","scope":"once","message":"not there"}"#
        );
        let always = ApprovalAnswer::from_message(r#"{"decision":"allow","scope":"always"}"#);
        assert_eq!(always.unwrap().scope, AnswerScope::Task);
        for bad in [
            r#"{"decision":"maybe"}"#,
            r#"{"decision":"allow","x":1}"#,
            "{}",
        ] {
            assert!(ApprovalAnswer::from_message(bad).is_err(), "{bad}");
        }
    }
}
