//! The real stages through the real pipeline, with a small tool: rules per agent and argument,
//! hidden tools, the loop guard ladder, hooks (deny, allow over ask, rewrites re-validated,
//! PostToolUse blocks) and output caps with the spilled text read back.

use std::{path::Path, sync::Arc};

use handoff_config::{PermissionAction, PermissionRule, ToolsConfig};
use handoff_policy::{
    hooks::{HookEvent, HookRunner, HookSpec, HooksConfig},
    loop_guard::Ladder,
    output::{Cap, SpillDir},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::*;
use crate::{
    AgentId, CallRequest, Pipeline, Reply, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolRegistry, builtin::ReadToolOutputTool,
};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShoutArgs {
    #[allow(dead_code)]
    agent_id: Option<AgentId>,
    #[schemars(length(max = 20))]
    text: String,
    #[serde(default)]
    repeat: usize,
}

#[derive(Serialize, JsonSchema)]
struct ShoutOut {
    output: String,
}

struct Shout {
    read_only: bool,
}

impl Tool for Shout {
    type Args = ShoutArgs;
    type Output = ShoutOut;
    fn name(&self) -> &'static str {
        if self.read_only { "peek" } else { "shout" }
    }
    fn description(&self) -> &'static str {
        "shouts"
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: self.read_only,
            ..ToolAnnotations::default()
        }
    }
    async fn call(&self, _: ToolContext, args: ShoutArgs) -> Result<Reply<ShoutOut>, ToolError> {
        let line = format!("{}\n", args.text.to_uppercase());
        let output = line.repeat(args.repeat.max(1));
        Ok(Reply::new(
            ShoutOut {
                output: output.clone(),
            },
            output,
        ))
    }
}

fn rule(
    permission: &str,
    pattern: &str,
    action: PermissionAction,
    agent: Option<&str>,
) -> PermissionRule {
    PermissionRule {
        agent: agent.map(str::to_owned),
        ..PermissionRule::new(permission, pattern, action)
    }
}

fn tools_config(max_lines: usize) -> ToolsConfig {
    ToolsConfig {
        permissions: handoff_config::PermissionPolicy::allow_all(),
        loop_guard: Ladder::default(),
        loop_guard_window: std::time::Duration::from_secs(600),
        output: Cap {
            max_lines,
            max_bytes: 50 * 1024,
            direction: Default::default(),
        },
        output_limits: Default::default(),
        spill_retention: std::time::Duration::from_secs(7 * 24 * 3600),
    }
}

struct Setup {
    rules: Vec<PermissionRule>,
    hooks: Vec<HookSpec>,
    max_lines: usize,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            rules: Vec::new(),
            hooks: Vec::new(),
            max_lines: 2000,
        }
    }
}

fn pipeline(setup: Setup, data: &Path) -> Pipeline {
    let spill = SpillDir::under(data);
    let mut registry = ToolRegistry::new();
    registry
        .register(Shout { read_only: false })
        .and_then(|r| r.register(Shout { read_only: true }))
        .and_then(|r| r.register(ReadToolOutputTool::new(spill.clone())))
        .unwrap();
    Pipeline::builder(registry)
        .permissions(Arc::new(RulePermissions::new(&setup.rules)))
        .loop_guard(Arc::new(CallLoopGuard::new(
            Ladder::default(),
            std::time::Duration::from_secs(600),
        )))
        .hooks(Arc::new(CommandHooks::new(
            HookRunner::new(HooksConfig { hooks: setup.hooks }),
            data.to_path_buf(),
        )))
        .output_limiter(Arc::new(SpillLimiter::new(
            spill,
            tools_config(setup.max_lines),
        )))
        .build()
}

fn as_agent(agent: &str) -> ToolContext {
    let mut ctx = ToolContext::new(format!("call-{agent}"), "1");
    ctx.agent_id = Some(AgentId::parse(agent).unwrap());
    ctx
}

async fn call(p: &Pipeline, agent: &str, tool: &str, args: Value) -> Result<Value, ToolError> {
    let Value::Object(arguments) = args else {
        panic!("object")
    };
    p.call(
        as_agent(agent),
        CallRequest {
            name: tool.to_owned(),
            arguments: Some(arguments),
        },
    )
    .await
}

fn hook(event: HookEvent, matcher: &str, command: &str) -> HookSpec {
    HookSpec {
        event,
        matcher: matcher.to_owned(),
        command: command.to_owned(),
        timeout_secs: 10,
        fail_closed: false,
    }
}

#[tokio::test]
async fn a_blanket_deny_hides_the_tool_from_that_agent_only() {
    let data = tempfile::tempdir().unwrap();
    let p = pipeline(
        Setup {
            rules: vec![rule("shout", "*", PermissionAction::Deny, Some("quiet-*"))],
            ..Setup::default()
        },
        data.path(),
    );
    let names = |agent: &str| -> Vec<&str> {
        p.list(Some(&AgentId::parse(agent).unwrap()))
            .iter()
            .map(|d| d.name)
            .collect()
    };
    assert!(!names("quiet-one").contains(&"shout"));
    assert!(names("loud-one").contains(&"shout"));
    let err = call(&p, "quiet-one", "shout", json!({"text": "hi"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::UnknownTool { .. }), "{err:?}");
    assert!(
        call(&p, "loud-one", "shout", json!({"text": "hi"}))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn argument_rules_deny_some_values_without_hiding_the_tool() {
    let data = tempfile::tempdir().unwrap();
    let p = pipeline(
        Setup {
            rules: vec![rule("shout", "text=secret*", PermissionAction::Deny, None)],
            ..Setup::default()
        },
        data.path(),
    );
    assert!(p.list(None).iter().any(|d| d.name == "shout"));
    let err = call(&p, "a", "shout", json!({"text": "secret plan"}))
        .await
        .unwrap_err();
    let ToolError::Denied { reason, .. } = err else {
        panic!("{err:?}")
    };
    assert!(reason.contains("text=secret*"), "{reason}");
    assert!(
        call(&p, "a", "shout", json!({"text": "public"}))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn the_loop_guard_refuses_repeats_of_changing_calls_but_not_reads() {
    let data = tempfile::tempdir().unwrap();
    let p = pipeline(Setup::default(), data.path());
    let args = json!({"text": "again"});
    assert!(call(&p, "a", "shout", args.clone()).await.is_ok());
    assert!(call(&p, "a", "shout", args.clone()).await.is_ok());
    let err = call(&p, "a", "shout", args.clone()).await.unwrap_err();
    let ToolError::Denied { reason, .. } = err else {
        panic!("{err:?}")
    };
    assert!(reason.starts_with("loop guard"), "{reason}");
    // Another agent, and a read-only tool, are not affected.
    assert!(call(&p, "b", "shout", args.clone()).await.is_ok());
    for _ in 0..10 {
        assert!(call(&p, "a", "peek", args.clone()).await.is_ok());
    }
}

#[tokio::test]
async fn naming_oneself_or_not_is_the_same_call_to_the_loop_guard() {
    let data = tempfile::tempdir().unwrap();
    let p = pipeline(Setup::default(), data.path());
    let plain = json!({"text": "again"});
    let named = json!({"text": "again", "agent_id": "a"});
    assert!(call(&p, "a", "shout", plain.clone()).await.is_ok());
    assert!(call(&p, "a", "shout", named.clone()).await.is_ok());
    let err = call(&p, "a", "shout", plain).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Denied { reason, .. } if reason.starts_with("loop guard")),
        "{err:?}"
    );
}

#[tokio::test]
async fn tools_judging_their_own_repeats_are_left_to_themselves() {
    use crate::pipeline::{GuardVerdict, LoopGuard};

    let mut registry = ToolRegistry::new();
    registry.register(Shout { read_only: false }).unwrap();
    let shout = registry.definitions().next().unwrap();
    let ctx = as_agent("a");
    let args = json!({"text": "again"});
    let counting = CallLoopGuard::new(Ladder::default(), std::time::Duration::from_secs(600));
    let exempting = CallLoopGuard::new(Ladder::default(), std::time::Duration::from_secs(600))
        .except(&["shout"]);
    let verdicts = async |guard: &CallLoopGuard| -> Vec<GuardVerdict> {
        let mut verdicts = Vec::new();
        for _ in 0..5 {
            verdicts.push(guard.check(&ctx, shout, &args).await);
        }
        verdicts
    };
    assert!(matches!(
        verdicts(&counting).await[2],
        GuardVerdict::Refuse(_)
    ));
    assert!(
        verdicts(&exempting)
            .await
            .iter()
            .all(|v| *v == GuardVerdict::Proceed)
    );
}

#[tokio::test]
async fn a_pre_tool_use_hook_denies_with_its_reason() {
    let data = tempfile::tempdir().unwrap();
    let p = pipeline(
        Setup {
            hooks: vec![hook(
                HookEvent::PreToolUse,
                "mcp__handoff__shout",
                "grep -q curl && { echo 'no curl' >&2; exit 2; } || exit 0",
            )],
            ..Setup::default()
        },
        data.path(),
    );
    let err = call(&p, "a", "shout", json!({"text": "curl x"}))
        .await
        .unwrap_err();
    let ToolError::Denied { reason, .. } = err else {
        panic!("{err:?}")
    };
    assert!(reason.contains("no curl"), "{reason}");
    assert!(call(&p, "a", "shout", json!({"text": "ls"})).await.is_ok());
    // The matcher names one tool: others pass.
    assert!(
        call(&p, "a", "peek", json!({"text": "curl x"}))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_hook_allow_lifts_an_ask_but_never_a_deny() {
    let data = tempfile::tempdir().unwrap();
    let allow = r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'"#;
    let setup = |action| Setup {
        rules: vec![rule("shout", "*", action, None)],
        hooks: vec![hook(HookEvent::PreToolUse, "", allow)],
        ..Setup::default()
    };
    let asked = pipeline(setup(PermissionAction::Ask), data.path());
    assert!(
        call(&asked, "a", "shout", json!({"text": "x"}))
            .await
            .is_ok()
    );
    let denied = pipeline(setup(PermissionAction::Deny), data.path());
    // A blanket deny hides the tool; a narrower one is judged per call.
    let narrow = Setup {
        rules: vec![rule("shout", "text=x", PermissionAction::Deny, None)],
        hooks: vec![hook(HookEvent::PreToolUse, "", allow)],
        ..Setup::default()
    };
    assert!(
        call(&denied, "a", "shout", json!({"text": "x"}))
            .await
            .is_err()
    );
    let narrow = pipeline(narrow, data.path());
    let err = call(&narrow, "a", "shout", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Denied { .. }), "{err:?}");
}

#[tokio::test]
async fn a_rewritten_input_is_validated_again() {
    let data = tempfile::tempdir().unwrap();
    let rewrite = r#"echo '{"hookSpecificOutput":{"updatedInput":{"text":"this text is far too long for the schema"}}}'"#;
    let p = pipeline(
        Setup {
            hooks: vec![hook(HookEvent::PreToolUse, "", rewrite)],
            ..Setup::default()
        },
        data.path(),
    );
    let err = call(&p, "a", "shout", json!({"text": "ok"}))
        .await
        .unwrap_err();
    let ToolError::InvalidArguments { pointer, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(pointer, "/text");
    let fine = r#"echo '{"hookSpecificOutput":{"updatedInput":{"text":"rewritten"}}}'"#;
    let p = pipeline(
        Setup {
            hooks: vec![hook(HookEvent::PreToolUse, "", fine)],
            ..Setup::default()
        },
        data.path(),
    );
    let out = call(&p, "a", "shout", json!({"text": "ok"})).await.unwrap();
    assert_eq!(out["output"], "REWRITTEN\n");
}

#[tokio::test]
async fn a_post_tool_use_hook_sees_the_result_and_can_block_it() {
    let data = tempfile::tempdir().unwrap();
    let seen = data.path().join("post.json");
    let command = format!(
        "cat > {}; echo 'result rejected' >&2; exit 2",
        seen.display()
    );
    let p = pipeline(
        Setup {
            hooks: vec![hook(HookEvent::PostToolUse, "", &command)],
            ..Setup::default()
        },
        data.path(),
    );
    let err = call(&p, "a", "shout", json!({"text": "hi"}))
        .await
        .unwrap_err();
    let ToolError::Denied { reason, .. } = err else {
        panic!("{err:?}")
    };
    assert!(reason.contains("result rejected"), "{reason}");
    let input: Value = serde_json::from_slice(&std::fs::read(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_name"], "mcp__handoff__shout");
    assert_eq!(input["tool_response"]["output"], "HI\n");
}

#[tokio::test]
async fn a_long_text_is_capped_like_the_output_and_readable_back() {
    let data = tempfile::tempdir().unwrap();
    let p = pipeline(
        Setup {
            max_lines: 5,
            ..Setup::default()
        },
        data.path(),
    );
    let Value::Object(arguments) = json!({"text": "line", "repeat": 40}) else {
        unreachable!()
    };
    let request = CallRequest {
        name: "shout".to_owned(),
        arguments: Some(arguments),
    };
    let reply = p.reply(as_agent("a"), request).await.unwrap();
    assert!(reply.text.contains("[… truncated"), "{}", reply.text);
    assert!(reply.text.lines().count() <= 8, "{}", reply.text);
    let id = reply
        .text
        .split_whitespace()
        .find(|w| w.starts_with("tool_"))
        .unwrap()
        .trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    let page = call(&p, "a", "read_tool_output", json!({"output_id": id}))
        .await
        .unwrap();
    assert_eq!(page["total_bytes"], 200, "{page}");
}

#[tokio::test]
async fn long_output_is_cut_from_the_tail_and_readable_back() {
    let data = tempfile::tempdir().unwrap();
    let p = pipeline(
        Setup {
            max_lines: 5,
            ..Setup::default()
        },
        data.path(),
    );
    let out = call(&p, "a", "shout", json!({"text": "line", "repeat": 40}))
        .await
        .unwrap();
    let text = out["output"].as_str().unwrap();
    assert!(text.starts_with("[… truncated"), "{text}");
    assert_eq!(text.lines().filter(|l| *l == "LINE").count(), 5);
    let id = text
        .split_whitespace()
        .find(|w| w.starts_with("tool_"))
        .unwrap();
    // Pages stay under the cap themselves, so reading back is never cut again.
    let mut offset = 0;
    let mut full = String::new();
    loop {
        let args = json!({"output_id": id, "offset": offset, "lines": 5});
        let page = call(&p, "a", "read_tool_output", args).await.unwrap();
        assert_eq!(page["total_bytes"], 200);
        full.push_str(page["text"].as_str().unwrap());
        match page["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(full, "LINE\n".repeat(40));
    // The result's metadata says what was cut and where the rest is.
    let ctx = as_agent("meta");
    let meta = ctx.result_meta().clone();
    let Value::Object(arguments) = json!({"text": "meta", "repeat": 40}) else {
        unreachable!()
    };
    p.call(
        ctx,
        CallRequest {
            name: "shout".to_owned(),
            arguments: Some(arguments),
        },
    )
    .await
    .unwrap();
    let truncation = meta.snapshot()["handoff/truncation"].clone();
    assert_eq!(truncation["truncated"], true, "{truncation}");
    assert_eq!(truncation["fields"][0]["pointer"], "/output");
    assert_eq!(truncation["fields"][0]["original_bytes"], 200);
    let path = truncation["fields"][0]["path"].as_str().unwrap();
    assert!(std::path::Path::new(path).starts_with(data.path().join("tool-output")));
    let bad = call(
        &p,
        "a",
        "read_tool_output",
        json!({"output_id": "tool_../../etc"}),
    )
    .await;
    assert!(
        matches!(bad, Err(ToolError::InvalidArguments { .. })),
        "{bad:?}"
    );
}

#[tokio::test]
async fn a_spilled_output_is_read_only_by_the_agent_that_produced_it() {
    let data = tempfile::tempdir().unwrap();
    let p = pipeline(
        Setup {
            max_lines: 5,
            ..Setup::default()
        },
        data.path(),
    );
    let out = call(
        &p,
        "agent-a",
        "shout",
        json!({"text": "a-secret", "repeat": 40}),
    )
    .await
    .unwrap();
    let text = out["output"].as_str().unwrap();
    let id = text
        .split_whitespace()
        .find(|w| w.starts_with("tool_"))
        .unwrap()
        .to_owned();
    let read = |agent: &'static str, id: String| {
        let p = &p;
        async move { call(p, agent, "read_tool_output", json!({"output_id": id})).await }
    };
    let own = read("agent-a", id.clone()).await.unwrap();
    assert!(own["text"].as_str().unwrap().contains("A-SECRET"), "{own}");
    // Another agent that learns the id learns nothing: "not found", as for an unknown id.
    let unknown = format!("tool_{}", "0".repeat(32));
    let foreign = read("agent-b", id.clone()).await.unwrap_err();
    let never = read("agent-b", unknown.clone()).await.unwrap_err();
    assert!(matches!(foreign, ToolError::NotFound { .. }), "{foreign:?}");
    assert_eq!(
        foreign.to_string().replace(&id, "ID"),
        never.to_string().replace(&unknown, "ID")
    );
    // An operator reads every caller's outputs, as it reads every task.
    let operator = ToolContext::new("call-op", "1")
        .with_agent(Some(AgentId::parse("ops").unwrap()))
        .with_operator(true);
    let Value::Object(arguments) = json!({"output_id": id}) else {
        unreachable!()
    };
    let page = p
        .call(
            operator,
            CallRequest {
                name: "read_tool_output".to_owned(),
                arguments: Some(arguments),
            },
        )
        .await
        .unwrap();
    assert!(
        page["text"].as_str().unwrap().contains("A-SECRET"),
        "{page}"
    );
}
