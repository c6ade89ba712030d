use super::*;
use PermissionAction::{Allow, Ask, Deny};

fn rule(permission: &str, pattern: &str, action: PermissionAction) -> PermissionRule {
    PermissionRule::new(permission, pattern, action)
}

fn global(rules: &[PermissionRule]) -> RuleStack {
    RuleStack::new().with_layer(Layer::Global, rules)
}

fn ask(stack: &RuleStack, permission: &str, patterns: &[&str]) -> Verdict {
    ask_with(stack, permission, patterns, &[])
}

fn ask_with(stack: &RuleStack, permission: &str, patterns: &[&str], grants: &[Grant]) -> Verdict {
    let patterns: Vec<String> = patterns.iter().map(|s| (*s).to_owned()).collect();
    stack.evaluate(
        &PermissionRequest {
            permission,
            patterns: &patterns,
            agent: Some("agent-a"),
            cwd: Some("/work/t1"),
            headless: false,
        },
        grants,
    )
}

fn grant(permission: &str, pattern: &str) -> Grant {
    Grant {
        id: "ap_1".to_owned(),
        permission: permission.to_owned(),
        pattern: pattern.to_owned(),
    }
}

#[test]
fn last_match_wins_and_order_matters() {
    let deny_last = global(&[rule("bash", "*", Allow), rule("bash", "rm *", Deny)]);
    assert_eq!(ask(&deny_last, "bash", &["rm -rf x"]).action, Deny);
    let allow_last = global(&[rule("bash", "rm *", Deny), rule("bash", "*", Allow)]);
    assert_eq!(ask(&allow_last, "bash", &["rm -rf x"]).action, Allow);
}

#[test]
fn no_match_is_ask() {
    let stack = global(&[rule("edit", "*", Allow)]);
    let verdict = ask(&stack, "bash", &["ls"]);
    assert_eq!(verdict.action, Ask);
    assert_eq!(verdict.parts[0].source, RuleSource::NoMatch);
}

#[test]
fn git_star_matches_bare_git() {
    let stack = global(&[rule("bash", "git *", Allow)]);
    assert_eq!(ask(&stack, "bash", &["git"]).action, Allow);
}

#[test]
fn layers_merge_without_reordering() {
    // Added out of order; evaluated defaults < global < project < agent < task.
    let stack = RuleStack::new()
        .with_layer(Layer::Task, &[rule("bash", "make *", Deny)])
        .with_layer(Layer::Defaults, &[rule("*", "*", Allow)])
        .with_layer(
            Layer::Global,
            &[
                rule("bash", "make *", Ask),
                rule("bash", "make test", Allow),
            ],
        );
    let layers: Vec<Layer> = stack.rules().map(|(l, _)| l).collect();
    assert_eq!(
        layers,
        [Layer::Defaults, Layer::Global, Layer::Global, Layer::Task]
    );
    let patterns: Vec<&str> = stack.rules().map(|(_, r)| r.pattern.as_str()).collect();
    assert_eq!(patterns, ["*", "make *", "make test", "make *"]);
    assert_eq!(ask(&stack, "bash", &["make test"]).action, Deny);
}

#[test]
fn a_configured_deny_is_final() {
    let stack = global(&[
        rule("*", "*", Allow),
        rule("bash", "ls *", Ask),
        rule("bash", "ls secret*", Deny),
    ])
    .with_layer(Layer::Task, &[rule("bash", "*", Allow)]);
    // Neither the task's own allow nor an approval for `ls *` lifts the operator's deny.
    let approved = [grant("bash", "ls *")];
    let verdict = ask_with(&stack, "bash", &["ls secret"], &approved);
    assert_eq!(verdict.action, Deny);
    assert!(matches!(
        &verdict.parts[0].source,
        RuleSource::Rule {
            layer: Layer::Global,
            ..
        }
    ));
}

#[test]
fn a_grant_turns_ask_into_allow() {
    let stack = global(&[rule("*", "*", Allow), rule("bash", "ls *", Ask)]);
    assert_eq!(ask(&stack, "bash", &["ls a"]).action, Ask);
    let verdict = ask_with(&stack, "bash", &["ls a"], &[grant("bash", "ls a")]);
    assert_eq!(verdict.action, Allow);
    assert_eq!(
        verdict.parts[0].source,
        RuleSource::Grant {
            id: "ap_1".to_owned()
        }
    );
    // An exact grant covers only the command shown.
    assert_eq!(
        ask_with(&stack, "bash", &["ls b"], &[grant("bash", "ls a")]).action,
        Ask
    );
}

#[test]
fn any_deny_among_the_patterns_denies_without_a_prompt_else_one_prompt() {
    let stack = global(&[
        rule("*", "*", Allow),
        rule("edit", "*.env", Deny),
        rule("edit", "docs/*", Ask),
    ]);
    let verdict = ask(&stack, "edit", &["docs/a.md", "src/.env", "src/main.rs"]);
    assert_eq!(verdict.action, Deny);
    assert_eq!(verdict.deciding().count(), 1);
    let verdict = ask(&stack, "edit", &["docs/a.md", "docs/b.md", "src/main.rs"]);
    assert_eq!(verdict.action, Ask);
    assert_eq!(verdict.deciding().count(), 2);
}

#[test]
fn path_rules_star_and_double_star_and_basenames() {
    let stack = global(&[
        rule("*", "*", Allow),
        rule("edit", "src/*", Ask),
        rule("read", "*.env", Deny),
        rule("edit", "vendor/**", Deny),
    ]);
    assert_eq!(ask(&stack, "edit", &["src/main.rs"]).action, Ask);
    assert_eq!(ask(&stack, "edit", &["src/deep/main.rs"]).action, Allow);
    assert_eq!(
        ask(&stack, "edit", &["/work/t1/vendor/a/b/c.rs"]).action,
        Deny
    );
    assert_eq!(ask(&stack, "read", &["a/b/.env"]).action, Deny);
}

#[test]
fn compound_commands_are_judged_part_by_part() {
    let stack = global(&[
        rule("bash", "*", Allow),
        rule("bash", "rm *", Deny),
        rule("bash", "curl *", Ask),
    ]);
    let verdict = ask(&stack, "bash", &["git status && rm x"]);
    assert_eq!(verdict.action, Deny);
    assert_eq!(verdict.deciding().next().unwrap().subject, "rm x");
    assert_eq!(ask(&stack, "bash", &["ls | curl http://x"]).action, Ask);
    assert_eq!(ask(&stack, "bash", &["echo $(rm -rf /)"]).action, Deny);
    assert_eq!(ask(&stack, "bash", &["(cd a; rm b)"]).action, Deny);
    assert_eq!(ask(&stack, "bash", &["git status; ls"]).action, Allow);
}

#[test]
fn a_program_path_is_its_basename() {
    let stack = global(&[rule("bash", "*", Allow), rule("bash", "sudo *", Deny)]);
    assert_eq!(ask(&stack, "bash", &["/usr/bin/sudo ls"]).action, Deny);
}

#[test]
fn unparseable_commands_are_asked_or_denied_when_headless() {
    let stack = global(&[rule("bash", "*", Allow)]);
    let verdict = ask(&stack, "bash", &["echo 'oops"]);
    assert_eq!(verdict.action, Ask);
    assert_eq!(verdict.parts[0].source, RuleSource::Unparseable);
    let patterns = vec!["echo 'oops".to_owned()];
    let headless = stack.evaluate(
        &PermissionRequest {
            permission: "bash",
            patterns: &patterns,
            agent: None,
            cwd: None,
            headless: true,
        },
        &[],
    );
    assert_eq!(headless.action, Deny);
}

#[test]
fn each_part_of_a_compound_command_needs_its_own_grant() {
    let stack = global(&[rule("bash", "*", Ask)]);
    let one = [grant("bash", "git status")];
    assert_eq!(
        ask_with(&stack, "bash", &["git status && git push"], &one).action,
        Ask
    );
    let both = [grant("bash", "git status"), grant("bash", "git push")];
    assert_eq!(
        ask_with(&stack, "bash", &["git status && git push"], &both).action,
        Allow
    );
}

#[test]
fn agent_rules_apply_only_to_their_agent() {
    let mut only_b = rule("send_task_control", "*", Deny);
    only_b.agent = Some("agent-b".to_owned());
    let stack = global(&[rule("*", "*", Allow), only_b]);
    assert_eq!(ask(&stack, "send_task_control", &[]).action, Allow);
    assert!(!stack.hidden("send_task_control", Some("agent-a")));
    assert!(stack.hidden("send_task_control", Some("agent-b")));
}

#[test]
fn a_tool_is_hidden_iff_its_last_rule_is_a_blanket_deny() {
    let stack = global(&[rule("*", "*", Allow), rule("execute_task", "*", Deny)]);
    assert!(stack.hidden("execute_task", None));
    assert!(!stack.hidden("get_task_status", None));
    let narrowed = global(&[
        rule("*", "*", Allow),
        rule("execute_task", "*", Deny),
        rule("execute_task", "executor=command", Allow),
    ]);
    assert!(!narrowed.hidden("execute_task", None));
    let pattern_deny = global(&[
        rule("*", "*", Allow),
        rule("execute_task", "executor=claude", Deny),
    ]);
    assert!(!pattern_deny.hidden("execute_task", None));
}

#[test]
fn the_reason_names_the_deciding_rule() {
    let stack = global(&[rule("bash", "*", Allow), rule("bash", "rm *", Deny)]);
    let reason = ask(&stack, "bash", &["ls && rm -rf x"]).reason();
    assert!(reason.contains("`rm -rf x`"), "{reason}");
    assert!(reason.contains("pattern: rm *"), "{reason}");
    assert!(!reason.contains("`ls`"), "{reason}");
}

#[test]
fn project_rules_apply_under_their_directory_only() {
    let mut make = rule("bash", "make *", Deny);
    make.project = Some("/work".to_owned());
    let stack = global(&[rule("*", "*", Allow), make]);
    let (_, layer_rule) = stack.rules().last().map(|(l, r)| (l, r.clone())).unwrap();
    assert_eq!(layer_rule.project.as_deref(), Some("/work"));
    assert_eq!(stack.rules().last().unwrap().0, Layer::Project);
    // ask() runs in /work/t1.
    assert_eq!(ask(&stack, "bash", &["make all"]).action, Deny);
    let patterns = vec!["make all".to_owned()];
    let elsewhere = stack.evaluate(
        &PermissionRequest {
            permission: "bash",
            patterns: &patterns,
            agent: None,
            cwd: Some("/workspace/other"),
            headless: false,
        },
        &[],
    );
    assert_eq!(elsewhere.action, Allow);
}
