//! Configured permission rules: what an executor or an agent may do without asking (allow),
//! never (deny), or only after someone answers (ask). Rules match a permission name (`bash`,
//! `edit`, a Handoff tool …) and a pattern (a command, a path, `key=value`); the **last**
//! matching rule wins, as in OpenCode, so a broad rule goes first and exceptions after. The
//! rules are judged by `handoff_policy`; this module only reads them.

use handoff_task::{PermissionAction, PermissionRule};
use serde::{Deserialize, Serialize};

use crate::parse::FromRaw;

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
        let rule = |permission: &str, action| PermissionRule::new(permission, "*", action);
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
    /// Every permission allowed (the default for Handoff's own tools).
    pub fn allow_all() -> Self {
        Self {
            rules: vec![PermissionRule::new("*", "*", PermissionAction::Allow)],
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
    fn default_policy_allows_and_asks_outside_the_task_directory() {
        let p = PermissionPolicy::default();
        assert_eq!(
            p.rules[0],
            PermissionRule::new("*", "*", PermissionAction::Allow)
        );
        assert_eq!(p.rules[1].permission, "external_directory");
        assert_eq!(p.rules[1].action, PermissionAction::Ask);
    }

    #[test]
    fn rules_may_name_an_agent_or_a_project() {
        let p = policy(
            r#"[{"permission":"send_task_control","action":"deny","agent":"planner-*"},
                {"permission":"bash","pattern":"make *","action":"allow","project":"/srv/app"}]"#,
        );
        assert_eq!(p.rules[0].agent.as_deref(), Some("planner-*"));
        assert_eq!(p.rules[1].project.as_deref(), Some("/srv/app"));
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
