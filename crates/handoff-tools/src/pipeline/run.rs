//! The fixed order of a tool call.

use std::{sync::Arc, time::Instant};

use handoff_protocol::codes;
use serde_json::{Map, Value};

use super::seams::{
    AllowAll, AuditEntry, AuditSink, BeforeHook, Decision, FailureRate, GuardVerdict, Hooks,
    LoopGuard, NoHooks, NoLoopGuard, OutputLimiter, PermissionPolicy, PermissionRequest,
    RATE_LIMIT_STAGE, TracingAudit, Unlimited, Unmetered,
};
use crate::{
    AgentId, FollowUps, Reply, ToolContext, ToolDefinition, ToolError, ToolRegistry,
    excerpt::{TEXT_CHARS, clip, excerpt},
};

/// A tool call as a transport received it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRequest {
    /// Requested tool name (or alias).
    pub name: String,
    /// Raw arguments; `None` when the caller omitted them.
    pub arguments: Option<Map<String, Value>>,
}

/// The structured output of a successful call, or why it failed.
pub type CallOutcome = Result<Value, ToolError>;

/// The structured output of a successful call with its text for a model, or why it failed.
pub type ReplyOutcome = Result<Reply<Value>, ToolError>;

/// Builds a [`Pipeline`]; every seam defaults to its pass-through implementation.
pub struct PipelineBuilder {
    registry: ToolRegistry,
    guard: Arc<dyn LoopGuard>,
    hooks: Arc<dyn Hooks>,
    permissions: Arc<dyn PermissionPolicy>,
    limiter: Arc<dyn OutputLimiter>,
    audit: Arc<dyn AuditSink>,
    failures: Arc<dyn FailureRate>,
    follow_ups: Option<Arc<dyn FollowUps>>,
}

impl PipelineBuilder {
    /// Sets the loop guard.
    pub fn loop_guard(mut self, guard: Arc<dyn LoopGuard>) -> Self {
        self.guard = guard;
        self
    }

    /// Sets the hooks.
    pub fn hooks(mut self, hooks: Arc<dyn Hooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Sets the permission policy.
    pub fn permissions(mut self, permissions: Arc<dyn PermissionPolicy>) -> Self {
        self.permissions = permissions;
        self
    }

    /// Sets the output limiter.
    pub fn output_limiter(mut self, limiter: Arc<dyn OutputLimiter>) -> Self {
        self.limiter = limiter;
        self
    }

    /// Sets the audit sink.
    pub fn audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = audit;
        self
    }

    /// Sets what failed calls cost their caller.
    pub fn failure_rate(mut self, failures: Arc<dyn FailureRate>) -> Self {
        self.failures = failures;
        self
    }

    /// Sets what tasks' owners hear without asking (an integration's promise), which every
    /// call's context carries so the tools' texts can say whether polling is needed.
    pub fn follow_ups(mut self, follow_ups: Arc<dyn FollowUps>) -> Self {
        self.follow_ups = Some(follow_ups);
        self
    }

    /// Finishes the pipeline.
    pub fn build(self) -> Pipeline {
        Pipeline {
            inner: Arc::new(self),
        }
    }
}

/// The one path every tool call takes, in this order: resolve the name → refuse hidden tools
/// → settle who calls in the context → loop guard → before-hooks → validate the
/// (possibly rewritten) arguments → permission → execute under deadline and cancellation →
/// output limits → after-hooks → audit.
#[derive(Clone)]
pub struct Pipeline {
    inner: Arc<PipelineBuilder>,
}

impl Pipeline {
    /// Starts a pipeline over `registry`.
    pub fn builder(registry: ToolRegistry) -> PipelineBuilder {
        PipelineBuilder {
            registry,
            guard: Arc::new(NoLoopGuard),
            hooks: Arc::new(NoHooks),
            permissions: Arc::new(AllowAll),
            limiter: Arc::new(Unlimited),
            audit: Arc::new(TracingAudit),
            failures: Arc::new(Unmetered),
            follow_ups: None,
        }
    }

    /// The tools `agent` may see, in name order.
    pub fn list(&self, agent: Option<&AgentId>) -> Vec<ToolDefinition> {
        self.inner
            .registry
            .definitions()
            .filter(|def| self.inner.permissions.visible(agent, def))
            .cloned()
            .collect()
    }

    /// Which tools `agent` may see, one flag per tool in name order: callers that share it
    /// share [`Pipeline::list`]'s answer (visibility is fixed when the pipeline is built).
    pub fn visibility(&self, agent: Option<&AgentId>) -> Vec<bool> {
        self.inner
            .registry
            .definitions()
            .map(|def| self.inner.permissions.visible(agent, def))
            .collect()
    }

    /// The definition `name` (or an alias of it) resolves to, if such a tool exists.
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.inner.registry.resolve(name).map(|t| t.definition())
    }

    /// The tool's own name for `name` (aliases resolve to it), if such a tool exists.
    pub fn canonical_name(&self, name: &str) -> Option<&'static str> {
        self.inner
            .registry
            .resolve(name)
            .map(|t| t.definition().name)
    }

    /// Runs one call through every stage; the structured output only.
    pub async fn call(&self, ctx: ToolContext, request: CallRequest) -> CallOutcome {
        self.reply(ctx, request).await.map(|reply| reply.output)
    }

    /// Runs one call through every stage: the structured output and its text.
    pub async fn reply(&self, ctx: ToolContext, request: CallRequest) -> ReplyOutcome {
        let started = Instant::now();
        let call_id = ctx.call_id.clone();
        let fallback = ctx.fallback_agent.clone();
        let mut trail = Trail {
            tool: request.name.clone(),
            agent: ctx.agent_id.clone(),
            stage: "resolve",
            reason: None,
            task_id: request
                .arguments
                .as_ref()
                .and_then(|a| a.get("task_id"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        let outcome = self.stages(ctx, request, &mut trail).await;
        let outcome = self
            .charge_failure(outcome, fallback.as_ref(), &mut trail)
            .await;
        if let Err(e) = &outcome
            && trail.reason.is_none()
        {
            trail.reason = Some(e.to_string());
        }
        // Bounded here, where the entry is built: the log line and the audit row are made from
        // it, and the caller's text in it (a tool name, a task id, an error quoting an
        // argument) may be megabytes.
        self.inner.audit.record(AuditEntry {
            call_id,
            tool: excerpt(&trail.tool).into_owned(),
            agent_id: trail.agent,
            outcome: match &outcome {
                Ok(_) => "ok",
                Err(e) => e.code(),
            },
            stage: trail.stage,
            reason: trail.reason.map(|r| clip(&r, TEXT_CHARS).into_owned()),
            task_id: trail.task_id.map(|t| excerpt(&t).into_owned()),
            elapsed: started.elapsed(),
        });
        outcome
    }

    /// A call that failed through the caller's fault costs it a token; without one left the
    /// answer is `RATE_LIMITED`, so a stream of bad calls slows down like a stream of
    /// submissions.
    async fn charge_failure(
        &self,
        outcome: ReplyOutcome,
        fallback: Option<&AgentId>,
        trail: &mut Trail,
    ) -> ReplyOutcome {
        let error = match outcome {
            Err(error) if error.is_callers_fault() => error,
            other => return other,
        };
        let payer = trail.agent.as_ref().or(fallback);
        match self.inner.failures.charge(payer).await {
            Ok(()) => Err(error),
            Err(wait) => {
                trail.stage = RATE_LIMIT_STAGE;
                trail.reason = Some(format!("too many failed calls; this one: {error}"));
                Err(ToolError::Busy {
                    code: codes::RATE_LIMITED,
                    message: format!(
                        "too many failed calls from this agent; retry in {} s (this one failed: {})",
                        wait.as_secs().max(1),
                        error.code()
                    ),
                    retry_after: Some(wait),
                })
            }
        }
    }

    async fn stages(
        &self,
        mut ctx: ToolContext,
        request: CallRequest,
        trail: &mut Trail,
    ) -> ReplyOutcome {
        let inner = &self.inner;
        let unknown = || ToolError::UnknownTool {
            name: request.name.clone(),
        };
        let tool = inner.registry.resolve(&request.name).ok_or_else(unknown)?;
        let def = tool.definition();
        trail.tool = def.name.to_owned();
        let denied = |reason: String| ToolError::Denied {
            tool: def.name.to_owned(),
            reason,
        };

        // Hidden tools are indistinguishable from missing ones.
        trail.stage = "visibility";
        if !inner.permissions.visible(ctx.agent_id.as_ref(), def) {
            return Err(unknown());
        }

        // Settled before any stage reads the caller; the arguments go on as the caller sent them.
        trail.stage = "identity";
        let args = request.arguments.unwrap_or_default();
        super::identity::settle(&mut ctx, def, &args)?;
        trail.agent = ctx.agent_id.clone();
        let args = Value::Object(args);

        trail.stage = "loop_guard";
        if let GuardVerdict::Refuse(reason) = inner.guard.check(&ctx, def, &args).await {
            return Err(denied(reason));
        }

        trail.stage = "hook";
        let (args, hook_approved) = match inner.hooks.before(&ctx, def, args).await {
            BeforeHook::Continue(args) => (args, false),
            BeforeHook::Approve(args) => (args, true),
            BeforeHook::Deny(reason) => return Err(denied(reason)),
        };

        trail.stage = "validate";
        def.validate(&args)
            .map_err(|failure| ToolError::InvalidArguments {
                tool: def.name.to_owned(),
                pointer: failure.pointer,
                message: failure.message,
            })?;

        trail.stage = "permission";
        self.permit(&ctx, def, &args, hook_approved, trail).await?;

        trail.stage = "execute";
        let mut ctx = ctx
            .with_permissions(inner.permissions.clone())
            .with_output_limits(inner.limiter.limits(def));
        if let Some(follow_ups) = &inner.follow_ups {
            ctx = ctx.with_follow_ups(follow_ups.clone());
        }
        let outcome = execute(tool.as_ref(), def, ctx.clone(), args).await;
        // The text is capped like the structured output: no part of a result bypasses the cap.
        let (outcome, text) = match outcome {
            Ok(reply) => (
                Ok(inner.limiter.limit(&ctx, def, reply.output)),
                inner.limiter.limit_text(&ctx, def, reply.text),
            ),
            Err(error) => (Err(error), String::new()),
        };
        if let Some(reason) = inner.hooks.after(&ctx, def, &outcome).await {
            trail.stage = "after_hook";
            return Err(denied(format!(
                "the call ran, but a PostToolUse hook blocked its result: {reason}"
            )));
        }
        outcome.map(|output| Reply::new(output, text))
    }

    /// The permission stage: the rules' decision, where a hook's allow spares the prompt (never
    /// a deny).
    async fn permit(
        &self,
        ctx: &ToolContext,
        def: &ToolDefinition,
        args: &Value,
        hook_approved: bool,
        trail: &mut Trail,
    ) -> Result<(), ToolError> {
        let permission = PermissionRequest {
            tool: def.name.to_owned(),
            permission: def.name.to_owned(),
            patterns: argument_patterns(args),
        };
        let decision = match self.inner.permissions.decide(ctx, &permission).await {
            Decision::Ask(reason) if hook_approved => {
                trail.reason = Some(format!("allowed by a PreToolUse hook over: {reason}"));
                Decision::Allow
            }
            decision => decision,
        };
        decision.into_result(&permission)
    }
}

/// What the audit record of one call says, filled in as the call moves through the stages.
struct Trail {
    tool: String,
    agent: Option<AgentId>,
    stage: &'static str,
    reason: Option<String>,
    task_id: Option<String>,
}

/// What permission rules for a Handoff tool match: each scalar argument as `key=value` (each
/// item of an array of scalars likewise); `agent_id` is the caller and not a subject.
pub(crate) fn argument_patterns(args: &Value) -> Vec<String> {
    let Some(map) = args.as_object() else {
        return Vec::new();
    };
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let mut patterns = Vec::new();
    for (key, value) in map {
        if key == "agent_id" {
            continue;
        }
        match value {
            Value::Array(items) => {
                patterns.extend(items.iter().filter_map(scalar).map(|v| pattern(key, &v)));
            }
            other => patterns.extend(scalar(other).map(|v| pattern(key, &v))),
        }
    }
    patterns
}

/// `key=value`, without `format!`'s machinery: it runs for every argument of every call.
fn pattern(key: &str, value: &str) -> String {
    let mut pattern = String::with_capacity(key.len() + 1 + value.len());
    pattern.push_str(key);
    pattern.push('=');
    pattern.push_str(value);
    pattern
}

async fn execute(
    tool: &dyn crate::declare::ErasedTool,
    def: &ToolDefinition,
    ctx: ToolContext,
    args: Value,
) -> ReplyOutcome {
    let cancel = ctx.cancel.clone();
    let deadline = ctx.deadline;
    let started = Instant::now();
    let run = tool.call_value(ctx, args);
    let timed = async {
        match deadline {
            Some(at) => tokio::time::timeout_at(at.into(), run)
                .await
                .unwrap_or_else(|_| {
                    Err(ToolError::Timeout {
                        tool: def.name.to_owned(),
                        after: started.elapsed(),
                    })
                }),
            None => run.await,
        }
    };
    tokio::select! {
        outcome = timed => outcome,
        () = cancel.cancelled() => Err(ToolError::Cancelled { tool: def.name.to_owned() }),
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
