//! One permission rule and the three actions it can name: plain data, read from configuration
//! and from a task's submission, judged by `handoff-policy`.

use serde::{Deserialize, Serialize};

/// What a rule says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionAction {
    /// Go ahead.
    Allow,
    /// Someone (the task's owner, a human) must answer first.
    Ask,
    /// Refuse.
    Deny,
}

impl PermissionAction {
    /// The action's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionAction::Allow => "allow",
            PermissionAction::Ask => "ask",
            PermissionAction::Deny => "deny",
        }
    }

    /// The stricter of two actions (deny > ask > allow).
    pub fn strictest(self, other: Self) -> Self {
        self.max(other)
    }
}

/// One rule: `permission` and `pattern` are wildcards; `agent`, when set, limits the rule to
/// the agents whose id matches it, and `project` to tasks working in that directory (or under it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionRule {
    /// Permission name wildcard (`bash`, `edit`, a Handoff tool name, `*`).
    pub permission: String,
    /// What the permission applies to (a command, a path, `key=value` of a tool argument).
    #[serde(default = "any")]
    pub pattern: String,
    /// What to do.
    pub action: PermissionAction,
    /// Only for agents whose id matches this wildcard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Only for tasks whose working directory is this path (or under it), or matches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

fn any() -> String {
    "*".to_owned()
}

impl PermissionRule {
    /// A rule for every agent.
    pub fn new(permission: &str, pattern: &str, action: PermissionAction) -> Self {
        Self {
            permission: permission.to_owned(),
            pattern: pattern.to_owned(),
            action,
            agent: None,
            project: None,
        }
    }

    /// Whether the rule covers every pattern of its permission (`pattern = "*"`).
    pub fn is_blanket(&self) -> bool {
        self.pattern == "*"
    }
}
