//! Requests an executor makes of the task's owner before it goes on — a permission ("may I
//! run `rm -rf build`?") or a question with options — and the answers that unblock it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of request it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// Permission to use a tool on something.
    Permission,
    /// A question for the user, usually with options.
    Question,
}

/// One request from a working executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The executor's id for the request (answers name it).
    pub id: String,
    /// Permission or question.
    pub kind: InputKind,
    /// The permission asked for (`bash`, `edit`, `external_directory` …); `question` for
    /// questions.
    pub permission: String,
    /// What it applies to: commands, paths.
    pub patterns: Vec<String>,
    /// One line for people.
    pub title: String,
    /// Everything else the executor said (tool input, question options).
    pub detail: Value,
}

/// Yes or no.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// Refuse.
    Deny,
}

/// For how long an allow holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// This request only.
    #[default]
    Once,
    /// Also for the same permission and subjects for the rest of this task (`always` is
    /// accepted as this).
    #[serde(alias = "always")]
    Task,
    /// Also for the same permission and subjects in every task of this agent in the same
    /// project, until revoked.
    Project,
}

/// An answer to an [`InputRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputAnswer {
    /// Allow or deny.
    pub decision: Decision,
    /// For how long.
    #[serde(default)]
    pub scope: Scope,
    /// Words for the agent: why it was denied, or the answer to a question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Which request; the oldest pending one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// With scope `task`/`project`: wildcards to approve instead of exactly the commands or
    /// paths shown (each must cover one of them, e.g. `ls *` for `ls src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
}

impl InputAnswer {
    /// A refusal with a reason.
    pub fn deny(message: impl Into<String>) -> Self {
        Self {
            decision: Decision::Deny,
            scope: Scope::Once,
            message: Some(message.into()),
            request_id: None,
            patterns: Vec::new(),
        }
    }

    /// A one-time permission.
    pub fn allow_once() -> Self {
        Self {
            decision: Decision::Allow,
            scope: Scope::Once,
            message: None,
            request_id: None,
            patterns: Vec::new(),
        }
    }
}
