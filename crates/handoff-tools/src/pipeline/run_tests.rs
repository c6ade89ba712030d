use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use handoff_task::Principal;
use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::*;
use crate::{
    FollowUp, Tool,
    pipeline::{AuditEntry, Decision},
};

type Log = Arc<Mutex<Vec<String>>>;

/// A task for the echo tool to ask its context about.
fn follow_up_probe() -> handoff_task::Task {
    handoff_task::Task {
        id: handoff_task::TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap(),
        agent_id: AgentId::parse("agent-a").unwrap(),
        description: "probe".into(),
        executor: "command".into(),
        options: handoff_task::TaskOptions::default(),
        status: handoff_task::TaskStatus::Running,
        priority: 0,
        queue_seq: 1,
        workdir: "/w".into(),
        created_at: 0,
        started_at: Some(0),
        completed_at: None,
        exit: None,
        error: None,
        idempotency_key: None,
        metadata: Value::Null,
        runner_state: None,
        result_delivered_at: None,
        lease: None,
        fence: 0,
    }
}

/// Promises a block and a message for every task.
struct Promising;

impl FollowUps for Promising {
    fn for_task(&self, task: &handoff_task::Task) -> FollowUp {
        FollowUp {
            memory_block: Some(format!("handoff_{}", task.id)),
            message_at_end: true,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    agent_id: Option<AgentId>,
    text: String,
    /// The call ends only when the pipeline stops it (deadline, cancel).
    #[serde(default)]
    hang: bool,
}

#[derive(Serialize, JsonSchema)]
struct EchoOut {
    text: String,
    agent_id: Option<String>,
    context_agent: Option<String>,
    caller: Option<String>,
}

struct Echo(Log);

impl Tool for Echo {
    type Args = EchoArgs;
    type Output = EchoOut;
    fn name(&self) -> &'static str {
        "echo"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["say"]
    }
    fn description(&self) -> &'static str {
        "echoes"
    }
    async fn call(&self, ctx: ToolContext, args: EchoArgs) -> Result<Reply<EchoOut>, ToolError> {
        self.0.lock().unwrap().push("execute".into());
        if args.hang {
            std::future::pending::<()>().await;
        }
        let task = follow_up_probe();
        let heard = ctx.follow_up(&task);
        let text = format!(
            "Echo: {} (block {:?}, message at end {})",
            args.text, heard.memory_block, heard.message_at_end
        );
        let output = EchoOut {
            text: args.text,
            agent_id: args.agent_id.map(|a| a.to_string()),
            caller: ctx.principal().map(|p| match p {
                Principal::Agent(id) => format!("agent:{id}"),
                Principal::Operator(id) => format!("operator:{id}"),
            }),
            context_agent: ctx.agent_id.map(|a| a.to_string()),
        };
        Ok(Reply::new(output, text))
    }
}

struct Recorder {
    log: Log,
    hidden: bool,
    deny_in_hook: bool,
    rewrite_to: Option<Value>,
    decision: Decision,
}

impl Recorder {
    fn new(log: &Log) -> Self {
        Self {
            log: log.clone(),
            hidden: false,
            deny_in_hook: false,
            rewrite_to: None,
            decision: Decision::Allow,
        }
    }
    fn push(&self, stage: &str) {
        self.log.lock().unwrap().push(stage.into());
    }
}

impl LoopGuard for Recorder {
    fn check<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a ToolDefinition,
        _: &'a Value,
    ) -> BoxFuture<'a, super::GuardVerdict> {
        self.push("loop_guard");
        Box::pin(std::future::ready(super::GuardVerdict::Proceed))
    }
}

impl Hooks for Recorder {
    fn before<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a ToolDefinition,
        args: Value,
    ) -> BoxFuture<'a, BeforeHook> {
        self.push("before_hooks");
        Box::pin(async move {
            if self.deny_in_hook {
                BeforeHook::Deny("hook says no".into())
            } else {
                BeforeHook::Continue(self.rewrite_to.clone().unwrap_or(args))
            }
        })
    }
    fn after<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a ToolDefinition,
        _: &'a Result<Value, ToolError>,
    ) -> BoxFuture<'a, Option<String>> {
        self.push("after_hooks");
        Box::pin(async { None })
    }
}

impl PermissionPolicy for Recorder {
    fn visible(&self, _: Option<&AgentId>, _: &ToolDefinition) -> bool {
        self.push("visible");
        !self.hidden
    }
    fn decide<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a PermissionRequest,
    ) -> BoxFuture<'a, Decision> {
        self.push("permission");
        Box::pin(async { self.decision.clone() })
    }
}

impl OutputLimiter for Recorder {
    fn limit(&self, _: &ToolContext, _: &ToolDefinition, output: Value) -> Value {
        self.push("limit");
        output
    }
}

impl AuditSink for Recorder {
    fn record(&self, entry: AuditEntry) {
        self.push(&format!("audit:{}", entry.outcome));
    }
}

fn pipeline(recorder: Recorder) -> Pipeline {
    let log = recorder.log.clone();
    let mut registry = ToolRegistry::new();
    registry.register(Echo(log)).unwrap();
    let r = Arc::new(recorder);
    Pipeline::builder(registry)
        .loop_guard(r.clone())
        .hooks(r.clone())
        .permissions(r.clone())
        .output_limiter(r.clone())
        .audit(r)
        .build()
}

fn call(name: &str, args: Value) -> CallRequest {
    CallRequest {
        name: name.into(),
        arguments: args.as_object().cloned(),
    }
}

fn ctx() -> ToolContext {
    ToolContext::new("call-1", "1")
}

fn stages(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[tokio::test]
async fn stages_run_in_the_fixed_order() {
    let log = Log::default();
    let p = pipeline(Recorder::new(&log));
    let out = p
        .call(ctx(), call("echo", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(out["text"], "hi");
    assert_eq!(
        stages(&log),
        [
            "visible",
            "loop_guard",
            "before_hooks",
            "permission",
            "execute",
            "limit",
            "after_hooks",
            "audit:ok"
        ]
    );
}

#[tokio::test]
async fn a_reply_carries_the_tool_s_text_beside_its_output() {
    let log = Log::default();
    let reply = pipeline(Recorder::new(&log))
        .reply(ctx(), call("echo", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(reply.output["text"], "hi");
    assert_eq!(reply.text, "Echo: hi (block None, message at end false)");
}

#[tokio::test]
async fn the_builder_s_follow_ups_reach_every_call_s_context() {
    let mut registry = ToolRegistry::new();
    registry.register(Echo(Log::default())).unwrap();
    let p = Pipeline::builder(registry)
        .follow_ups(Arc::new(Promising))
        .build();
    let reply = p
        .reply(ctx(), call("echo", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(
        reply.text,
        "Echo: hi (block Some(\"handoff_task_abcdefghijklmnopqrstuvwxyz\"), message at end true)"
    );
}

#[tokio::test]
async fn hook_deny_means_no_permission_prompt_and_no_execution() {
    let log = Log::default();
    let p = pipeline(Recorder {
        deny_in_hook: true,
        ..Recorder::new(&log)
    });
    let err = p
        .call(ctx(), call("echo", json!({"text": "hi"})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "DENIED");
    assert_eq!(
        stages(&log),
        ["visible", "loop_guard", "before_hooks", "audit:DENIED"]
    );
}

#[tokio::test]
async fn rewritten_input_that_fails_validation_never_executes() {
    let log = Log::default();
    let p = pipeline(Recorder {
        rewrite_to: Some(json!({"text": 5})),
        ..Recorder::new(&log)
    });
    let err = p
        .call(ctx(), call("echo", json!({"text": "hi"})))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments { pointer, .. } if pointer == "/text"),
        "{err:?}"
    );
    assert_eq!(
        stages(&log),
        [
            "visible",
            "loop_guard",
            "before_hooks",
            "audit:INVALID_ARGUMENTS"
        ]
    );
}

#[tokio::test]
async fn hidden_tool_looks_unknown() {
    let log = Log::default();
    let p = pipeline(Recorder {
        hidden: true,
        ..Recorder::new(&log)
    });
    assert!(p.list(None).is_empty());
    let err = p
        .call(ctx(), call("echo", json!({"text": "hi"})))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::UnknownTool {
            name: "echo".into()
        }
    );
}

#[tokio::test]
async fn unknown_tool_and_alias() {
    let log = Log::default();
    let p = pipeline(Recorder::new(&log));
    let err = p.call(ctx(), call("nope", json!({}))).await.unwrap_err();
    assert_eq!(err.code(), "UNKNOWN_TOOL");
    let out = p
        .call(ctx(), call("say", json!({"text": "x"})))
        .await
        .unwrap();
    assert_eq!(out["text"], "x");
    assert_eq!(p.list(None).len(), 1, "aliases are not listed");
}

#[tokio::test]
async fn permission_deny_and_unanswered_ask_refuse() {
    for decision in [Decision::Deny("rule".into()), Decision::Ask("rule".into())] {
        let log = Log::default();
        let p = pipeline(Recorder {
            decision,
            ..Recorder::new(&log)
        });
        let err = p
            .call(ctx(), call("echo", json!({"text": "x"})))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "DENIED");
        assert!(!stages(&log).contains(&"execute".to_owned()));
    }
}

#[tokio::test]
async fn header_identity_is_the_caller_and_an_argument_cannot_override_it() {
    let log = Log::default();
    let p = pipeline(Recorder::new(&log));
    let header = AgentId::parse("from-header").unwrap();
    let filled = p
        .call(
            ctx().with_agent(Some(header.clone())),
            call("echo", json!({"text": "x"})),
        )
        .await
        .unwrap();
    // The caller travels in the context; the arguments reach the tool as they were sent.
    assert_eq!(filled["agent_id"], Value::Null);
    assert_eq!(filled["context_agent"], "from-header");
    assert_eq!(filled["caller"], "agent:from-header");
    let repeated = p
        .call(
            ctx().with_agent(Some(header.clone())),
            call("echo", json!({"text": "x", "agent_id": "from-header"})),
        )
        .await
        .unwrap();
    assert_eq!(repeated["context_agent"], "from-header");
    let other = p
        .call(
            ctx().with_agent(Some(header)),
            call("echo", json!({"text": "x", "agent_id": "someone-else"})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&other, ToolError::InvalidArguments { pointer, message, .. }
            if pointer == "/agent_id" && !message.contains("someone-else")),
        "{other:?}"
    );
    // No identity from the edge (open server, gateway without a header): the argument chooses.
    let chosen = p
        .call(
            ctx(),
            call("echo", json!({"text": "x", "agent_id": "explicit"})),
        )
        .await
        .unwrap();
    assert_eq!(chosen["context_agent"], "explicit");
    assert_eq!(chosen["caller"], "agent:explicit");
    // Nothing at all: the configured default.
    let default = p
        .call(
            ctx().with_fallback_agent(Some(AgentId::parse("fallback").unwrap())),
            call("echo", json!({"text": "x"})),
        )
        .await
        .unwrap();
    assert_eq!(default["context_agent"], "fallback");
    assert_eq!(default["caller"], "agent:fallback");
    let bad = p
        .call(
            ctx(),
            call("echo", json!({"text": "x", "agent_id": "bad id"})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&bad, ToolError::InvalidArguments { pointer, .. } if pointer == "/agent_id"),
        "{bad:?}"
    );
}

#[tokio::test]
async fn an_operator_stays_itself_and_its_argument_names_whose_tasks() {
    let p = pipeline(Recorder::new(&Log::default()));
    let ops = || ctx().with_agent(Some(AgentId::parse("ops").unwrap()));
    let named = p
        .call(
            ops().with_operator(true),
            call("echo", json!({"text": "x", "agent_id": "agent-x"})),
        )
        .await
        .unwrap();
    assert_eq!(named["caller"], "operator:ops");
    assert_eq!(named["agent_id"], "agent-x");
    let bad = p
        .call(
            ops().with_operator(true),
            call("echo", json!({"text": "x", "agent_id": "bad id"})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&bad, ToolError::InvalidArguments { pointer, .. } if pointer == "/agent_id"),
        "{bad:?}"
    );
    // An operator flag without a name is nobody's: the caller is settled as for anyone else.
    let nameless = p
        .call(
            ctx().with_operator(true),
            call("echo", json!({"text": "x", "agent_id": "explicit"})),
        )
        .await
        .unwrap();
    assert_eq!(nameless["caller"], "agent:explicit");
}

#[tokio::test]
async fn deadline_and_cancellation_stop_execution() {
    let log = Log::default();
    let p = pipeline(Recorder::new(&log));
    let deadline = std::time::Instant::now() + Duration::from_millis(20);
    let err = p
        .call(
            ctx().with_deadline(Some(deadline)),
            call("echo", json!({"text": "x", "hang": true})),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");

    let executed = || {
        log.lock()
            .unwrap()
            .iter()
            .filter(|s| *s == "execute")
            .count()
    };
    let before = executed();
    let cancel = tokio_util::sync::CancellationToken::new();
    let c = ctx().with_cancel(cancel.clone());
    let handle = tokio::spawn({
        let p = p.clone();
        async move {
            p.call(c, call("echo", json!({"text": "x", "hang": true})))
                .await
        }
    });
    // Cancelled while the tool runs: once this call has started.
    let started = async {
        while executed() == before {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), started)
        .await
        .expect("the call never started");
    cancel.cancel();
    assert_eq!(handle.await.unwrap().unwrap_err().code(), "CANCELLED");
}

#[tokio::test]
async fn omitted_arguments_are_an_empty_object() {
    let log = Log::default();
    let p = pipeline(Recorder::new(&log));
    let err = p
        .call(
            ctx(),
            CallRequest {
                name: "echo".into(),
                arguments: None,
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments { pointer, message, .. }
            if pointer == "/text" && message.contains("missing")),
        "{err:?}"
    );
}

/// Keeps every audit entry, as the log line and the store row are made from them.
#[derive(Default)]
struct Entries(Mutex<Vec<AuditEntry>>);

impl AuditSink for Entries {
    fn record(&self, entry: AuditEntry) {
        self.0.lock().unwrap().push(entry);
    }
}

/// Allows `left` failed calls, then refuses.
struct Budget(Mutex<u32>);

impl super::FailureRate for Budget {
    fn charge<'a>(&'a self, _: Option<&'a AgentId>) -> BoxFuture<'a, Result<(), Duration>> {
        let mut left = self.0.lock().unwrap();
        let charged = if *left == 0 {
            Err(Duration::from_secs(30))
        } else {
            *left -= 1;
            Ok(())
        };
        Box::pin(std::future::ready(charged))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShortArgs {
    #[schemars(length(max = 1024))]
    #[allow(dead_code)]
    message: String,
    #[allow(dead_code)]
    task_id: Option<String>,
}

struct Short;

impl Tool for Short {
    type Args = ShortArgs;
    type Output = EchoOut;
    fn name(&self) -> &'static str {
        "short"
    }
    fn description(&self) -> &'static str {
        "takes a short message"
    }
    async fn call(&self, _: ToolContext, _: ShortArgs) -> Result<Reply<EchoOut>, ToolError> {
        Err(ToolError::NotFound {
            what: "anything".into(),
        })
    }
}

fn bounded_pipeline(entries: &Arc<Entries>, failures_allowed: u32) -> Pipeline {
    let mut registry = ToolRegistry::new();
    registry
        .register(Short)
        .and_then(|r| r.register(Echo(Log::default())))
        .unwrap();
    Pipeline::builder(registry)
        .audit(entries.clone())
        .failure_rate(Arc::new(Budget(Mutex::new(failures_allowed))))
        .build()
}

#[tokio::test]
async fn a_huge_argument_is_named_by_field_and_size_and_never_echoed() {
    let entries = Arc::new(Entries::default());
    let p = bounded_pipeline(&entries, u32::MAX);
    let huge = "m".repeat(1 << 20);
    let err = p
        .call(
            ctx(),
            call("short", json!({"message": huge, "task_id": huge})),
        )
        .await
        .unwrap_err();
    let body = serde_json::to_string(&err.body()).unwrap();
    assert!(body.len() < 1024, "an error of {} bytes", body.len());
    assert!(body.contains("/message"), "{body}");
    assert!(body.contains("1048576 bytes"), "{body}");
    assert!(!body.contains(&"m".repeat(65)), "{body}");
    // An unknown tool named by a megabyte is answered and audited with an excerpt.
    let unknown = p.call(ctx(), call(&huge, json!({}))).await.unwrap_err();
    assert!(unknown.to_string().len() < 256, "{unknown}");
    let entries = entries.0.lock().unwrap();
    assert_eq!(entries.len(), 2);
    for entry in entries.iter() {
        let line = format!("{entry:?}");
        assert!(line.len() < 2048, "an audit entry of {} bytes", line.len());
    }
}

#[tokio::test]
async fn failed_calls_are_charged_and_refused_when_none_are_left() {
    let entries = Arc::new(Entries::default());
    let p = bounded_pipeline(&entries, 2);
    for _ in 0..2 {
        let err = p.call(ctx(), call("echo", json!({}))).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENTS");
    }
    // Successful calls cost nothing.
    for _ in 0..5 {
        p.call(ctx(), call("echo", json!({"text": "ok"})))
            .await
            .unwrap();
    }
    let err = p.call(ctx(), call("echo", json!({}))).await.unwrap_err();
    assert_eq!(err.code(), "RATE_LIMITED", "{err}");
    assert!(
        matches!(&err, ToolError::Busy { retry_after: Some(d), .. } if *d == Duration::from_secs(30)),
        "{err:?}"
    );
    let unknown = p.call(ctx(), call("nope", json!({}))).await.unwrap_err();
    assert_eq!(
        unknown.code(),
        "RATE_LIMITED",
        "unknown tools are failed calls too"
    );
    let entries = entries.0.lock().unwrap();
    assert_eq!(entries.last().unwrap().stage, super::RATE_LIMIT_STAGE);
}
