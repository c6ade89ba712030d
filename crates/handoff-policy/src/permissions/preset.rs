//! The static part of the rules, handed to an executor that can apply rules itself (OpenCode's
//! per-session ruleset) so simple cases never round-trip: a permission whose every rule is a
//! blanket, unconditional one is decided there; everything else — patterns, agent or project
//! rules, the task's own rules, anything a PreToolUse hook must see — is asked of Handoff.

use handoff_task::{PermissionAction, PermissionRule};

use super::stack::RuleStack;

/// OpenCode's permission names.
pub const OPENCODE_PERMISSIONS: [&str; 15] = [
    "read",
    "edit",
    "glob",
    "grep",
    "list",
    "bash",
    "task",
    "webfetch",
    "websearch",
    "codesearch",
    "todowrite",
    "todoread",
    "skill",
    "lsp",
    "external_directory",
];

/// The ruleset for one session: ask everything, then the permissions decided statically.
/// `intercepted` says whether a hook must see a permission's calls (they are then asked).
pub fn preset_rules(stack: &RuleStack, intercepted: impl Fn(&str) -> bool) -> Vec<PermissionRule> {
    let mut rules = vec![PermissionRule::new("*", "*", PermissionAction::Ask)];
    for permission in OPENCODE_PERMISSIONS {
        let applying: Vec<&PermissionRule> = stack
            .rules()
            .filter(|(_, r)| wildmatch::WildMatch::new(&r.permission).matches(permission))
            .map(|(_, r)| r)
            .collect();
        let unconditional = applying
            .iter()
            .all(|r| r.is_blanket() && r.agent.is_none() && r.project.is_none());
        let Some(last) = applying.last() else {
            continue;
        };
        if !unconditional || last.action == PermissionAction::Ask {
            continue;
        }
        if last.action == PermissionAction::Allow && intercepted(permission) {
            continue;
        }
        rules.push(PermissionRule::new(permission, "*", last.action));
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layer;
    use PermissionAction::{Allow, Ask, Deny};

    fn names(rules: &[PermissionRule]) -> Vec<(String, PermissionAction)> {
        rules
            .iter()
            .map(|r| (r.permission.clone(), r.action))
            .collect()
    }

    #[test]
    fn blanket_permissions_are_preset_and_the_rest_asked() {
        let stack = RuleStack::new().with_layer(
            Layer::Global,
            &[
                PermissionRule::new("*", "*", Allow),
                PermissionRule::new("bash", "rm *", Deny),
                PermissionRule::new("webfetch", "*", Deny),
                PermissionRule::new("external_directory", "*", Ask),
            ],
        );
        let preset = preset_rules(&stack, |p| p == "edit");
        let got = names(&preset);
        assert_eq!(got[0], ("*".to_owned(), Ask));
        assert!(got.contains(&("read".to_owned(), Allow)));
        assert!(got.contains(&("webfetch".to_owned(), Deny)));
        // bash has a pattern rule, edit is hooked, external_directory asks: all reach Handoff.
        for asked in ["bash", "edit", "external_directory"] {
            assert!(!got.iter().any(|(p, _)| p == asked), "{asked}: {got:?}");
        }
    }

    #[test]
    fn task_and_agent_rules_keep_a_permission_with_handoff() {
        let mut for_agent = PermissionRule::new("read", "*", Deny);
        for_agent.agent = Some("a".to_owned());
        let stack = RuleStack::new()
            .with_layer(
                Layer::Global,
                &[PermissionRule::new("*", "*", Allow), for_agent],
            )
            .with_layer(Layer::Task, &[PermissionRule::new("grep", "*.lock", Deny)]);
        let got = names(&preset_rules(&stack, |_| false));
        assert!(
            !got.iter().any(|(p, _)| p == "read" || p == "grep"),
            "{got:?}"
        );
        assert!(got.contains(&("glob".to_owned(), Allow)));
    }
}
