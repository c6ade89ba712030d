//! The permission policy: what an executor may do without asking (allow), never (deny), or only
//! after someone answers (ask). Rules match a permission name (`bash`, `edit`,
//! `external_directory` …) and a pattern (the command, path …) with `*`/`?` wildcards; the
//! **last** matching rule wins, as in OpenCode, so a broad rule goes first and exceptions after.

use serde::{Deserialize, Serialize};
use wildmatch::WildMatch;

use crate::parse::FromRaw;

/// What the policy says about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionAction {
    /// Go ahead.
    Allow,
    /// Refuse.
    Deny,
    /// Wait for an answer from the task's owner.
    Ask,
}

impl PermissionAction {
    /// The action's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionAction::Allow => "allow",
            PermissionAction::Deny => "deny",
            PermissionAction::Ask => "ask",
        }
    }
}

/// One rule: `permission` and `pattern` are wildcards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionRule {
    /// Permission name wildcard (`bash`, `edit`, `*`).
    pub permission: String,
    /// What the permission applies to (a command, a path), as a wildcard.
    #[serde(default = "any")]
    pub pattern: String,
    /// What to do.
    pub action: PermissionAction,
}

fn any() -> String {
    "*".to_owned()
}

/// An ordered rule list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PermissionPolicy {
    /// The rules, broadest first.
    pub rules: Vec<PermissionRule>,
}

impl Default for PermissionPolicy {
    /// Work inside the task directory freely; leaving it, or a detected loop, needs an answer.
    fn default() -> Self {
        let rule = |permission: &str, action| PermissionRule {
            permission: permission.to_owned(),
            pattern: any(),
            action,
        };
        Self {
            rules: vec![
                rule("*", PermissionAction::Allow),
                rule("external_directory", PermissionAction::Ask),
                rule("doom_loop", PermissionAction::Ask),
            ],
        }
    }
}

impl PermissionPolicy {
    /// The action for one pattern: the last matching rule's, or `ask` when none matches.
    pub fn action_for(&self, permission: &str, pattern: &str) -> PermissionAction {
        self.rules
            .iter()
            .rev()
            .find(|rule| {
                WildMatch::new(&rule.permission).matches(permission)
                    && WildMatch::new(&rule.pattern).matches(pattern)
            })
            .map_or(PermissionAction::Ask, |rule| rule.action)
    }

    /// The action for a request covering several patterns: deny if any is denied, else ask if
    /// any needs asking, else allow.
    pub fn decide(&self, permission: &str, patterns: &[String]) -> PermissionAction {
        let actions: Vec<PermissionAction> = if patterns.is_empty() {
            vec![self.action_for(permission, "*")]
        } else {
            patterns
                .iter()
                .map(|p| self.action_for(permission, p))
                .collect()
        };
        if actions.contains(&PermissionAction::Deny) {
            PermissionAction::Deny
        } else if actions.contains(&PermissionAction::Ask) {
            PermissionAction::Ask
        } else {
            PermissionAction::Allow
        }
    }
}

impl FromRaw for PermissionPolicy {
    fn from_text(text: &str) -> Result<Self, String> {
        serde_json::from_str(text.trim()).map_err(|e| {
            format!(
                "expected a JSON array of {{\"permission\", \"pattern\", \"action\": allow|deny|ask}}: {e}"
            )
        })
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::String(s) => Self::from_text(s),
            other => {
                let json = serde_json::to_value(other).map_err(|e| e.to_string())?;
                serde_json::from_value(json).map_err(|e| {
                    format!("expected an array of {{permission, pattern, action}} tables: {e}")
                })
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn policy(json: &str) -> PermissionPolicy {
        PermissionPolicy::from_text(json).unwrap()
    }

    #[test]
    fn last_matching_rule_wins() {
        let p = policy(
            r#"[{"permission":"*","action":"allow"},
                {"permission":"bash","pattern":"rm *","action":"deny"},
                {"permission":"bash","pattern":"rm -i *","action":"ask"}]"#,
        );
        assert_eq!(p.action_for("bash", "ls -la"), PermissionAction::Allow);
        assert_eq!(p.action_for("bash", "rm -rf /"), PermissionAction::Deny);
        assert_eq!(p.action_for("bash", "rm -i x"), PermissionAction::Ask);
        assert_eq!(p.action_for("edit", "src/a.rs"), PermissionAction::Allow);
    }

    #[test]
    fn unmatched_requests_are_asked() {
        let p = policy(r#"[{"permission":"edit","action":"allow"}]"#);
        assert_eq!(p.action_for("bash", "ls"), PermissionAction::Ask);
    }

    #[test]
    fn several_patterns_take_the_strictest() {
        let p = policy(
            r#"[{"permission":"*","action":"allow"},
                {"permission":"bash","pattern":"curl *","action":"ask"},
                {"permission":"bash","pattern":"sudo *","action":"deny"}]"#,
        );
        let patterns = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            p.decide("bash", &patterns(&["ls", "curl x"])),
            PermissionAction::Ask
        );
        assert_eq!(
            p.decide("bash", &patterns(&["curl x", "sudo y"])),
            PermissionAction::Deny
        );
        assert_eq!(p.decide("bash", &[]), PermissionAction::Allow);
    }

    #[test]
    fn default_policy_asks_outside_the_task_directory() {
        let p = PermissionPolicy::default();
        assert_eq!(p.action_for("edit", "a.txt"), PermissionAction::Allow);
        assert_eq!(
            p.action_for("external_directory", "/etc/*"),
            PermissionAction::Ask
        );
    }

    #[test]
    fn bad_rules_are_refused_with_the_reason() {
        let err =
            PermissionPolicy::from_text(r#"[{"permission":"bash","action":"maybe"}]"#).unwrap_err();
        assert!(err.contains("allow|deny|ask"), "{err}");
        assert!(PermissionPolicy::from_text(r#"[{"permision":"x","action":"allow"}]"#).is_err());
    }

    #[test]
    fn toml_tables_parse() {
        let value: toml::Value = toml::from_str(
            "rules = [{ permission = \"bash\", pattern = \"git *\", action = \"allow\" }]",
        )
        .unwrap();
        let rules = value.get("rules").unwrap();
        let p = PermissionPolicy::from_toml(rules).unwrap();
        assert_eq!(p.rules.len(), 1);
        assert_eq!(p.rules[0].action, PermissionAction::Allow);
    }
}
