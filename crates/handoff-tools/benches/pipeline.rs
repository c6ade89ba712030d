//! Pipeline overhead per Handoff tool call: every stage off (pass-through seams) against every
//! stage on — 1,000 permission rules, the loop guard, output caps with spill, and (last row) one
//! real PreToolUse hook process — measured in the same run on the `ping` tool.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::{sync::Arc, time::Instant};

use handoff_config::{PermissionAction, PermissionPolicy, PermissionRule, ToolsConfig};
use handoff_policy::{
    hooks::{HookEvent, HookRunner, HookSpec, HooksConfig},
    loop_guard::Ladder,
    output::{Cap, SpillDir},
};
use handoff_tools::{
    CallRequest, Pipeline, ToolContext, ToolRegistry,
    builtin::PingTool,
    stages::{CallLoopGuard, CommandHooks, RulePermissions, SpillLimiter},
};
use serde_json::{Map, Value};

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register(PingTool).unwrap();
    registry
}

fn rules(n: usize) -> Vec<PermissionRule> {
    (0..n)
        .map(|i| {
            PermissionRule::new(
                &format!("tool_{i}"),
                &format!("key=value{i}*"),
                PermissionAction::Deny,
            )
        })
        .collect()
}

fn all_on(data: &std::path::Path, hooks: Vec<HookSpec>) -> Pipeline {
    let tools = ToolsConfig {
        permissions: PermissionPolicy { rules: rules(1000) },
        loop_guard: Ladder::default(),
        loop_guard_window: std::time::Duration::from_secs(600),
        output: Cap::default(),
        output_limits: Default::default(),
        spill_retention: std::time::Duration::from_secs(7 * 86400),
    };
    Pipeline::builder(registry())
        .permissions(Arc::new(RulePermissions::new(&tools.permissions.rules)))
        .loop_guard(Arc::new(CallLoopGuard::new(
            tools.loop_guard,
            tools.loop_guard_window,
        )))
        .hooks(Arc::new(CommandHooks::new(
            HookRunner::new(HooksConfig { hooks }),
            data.to_path_buf(),
        )))
        .output_limiter(Arc::new(SpillLimiter::new(SpillDir::under(data), tools)))
        .build()
}

async fn median_us(pipeline: &Pipeline, n: usize) -> f64 {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let mut args = Map::new();
        args.insert("message".to_owned(), Value::String(format!("hello {i}")));
        let mut ctx = ToolContext::new(format!("c{i}"), "1");
        ctx.agent_id = Some(handoff_tools::AgentId::parse("bench-agent").unwrap());
        let started = Instant::now();
        let out = pipeline
            .call(
                ctx,
                CallRequest {
                    name: "ping".to_owned(),
                    arguments: Some(args),
                },
            )
            .await;
        times.push(started.elapsed().as_secs_f64() * 1e6);
        assert!(out.is_ok(), "{out:?}");
    }
    times.sort_by(f64::total_cmp);
    times[n / 2]
}

#[tokio::main]
async fn main() {
    let data = tempfile::tempdir().unwrap();
    let off = Pipeline::builder(registry()).build();
    let on = all_on(data.path(), Vec::new());
    let hooked = all_on(
        data.path(),
        vec![HookSpec {
            event: HookEvent::PreToolUse,
            matcher: String::new(),
            command: "true".to_owned(),
            timeout_secs: 10,
            fail_closed: false,
        }],
    );
    median_us(&on, 200).await; // warm-up
    let base = median_us(&off, 5000).await;
    let stages = median_us(&on, 5000).await;
    let hook = median_us(&hooked, 300).await;
    println!("pipeline overhead per call (ping, median of the same run)");
    println!("  stages off (pass-through):                   {base:9.2} µs");
    println!(
        "  stages on (1,000 rules, guard, caps):        {stages:9.2} µs  ({:.1}× off)",
        stages / base
    );
    println!(
        "  stages on + one PreToolUse hook (`true`):    {hook:9.2} µs  ({:.1}× off)",
        hook / base
    );
}
