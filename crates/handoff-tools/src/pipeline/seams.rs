//! The stages of the pipeline as traits. Each has a pass-through implementation used until
//! the issue that builds the real stage (permission rules, hooks, loop guard, truncation)
//! plugs its own in; the order they run in is fixed by [`crate::Pipeline`], not by them.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::{AgentId, ToolContext, ToolDefinition, ToolError};

/// Verdict of the loop guard, checked before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardVerdict {
    /// Not a loop.
    Proceed,
    /// A repeated call: refuse with this explanation.
    Refuse(String),
}

/// Detects an agent calling the same tool with the same arguments over and over.
pub trait LoopGuard: Send + Sync {
    /// Judges a call before it runs.
    fn check<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
        args: &'a Value,
    ) -> BoxFuture<'a, GuardVerdict>;
}

/// No loop detection.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoLoopGuard;

impl LoopGuard for NoLoopGuard {
    fn check<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a ToolDefinition,
        _: &'a Value,
    ) -> BoxFuture<'a, GuardVerdict> {
        Box::pin(std::future::ready(GuardVerdict::Proceed))
    }
}

/// What the before-hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeHook {
    /// Go on with these arguments (possibly rewritten; they are validated next).
    Continue(Value),
    /// A hook allowed the call: a rule's "ask" becomes allow (a rule's deny still stands).
    Approve(Value),
    /// Refuse the call; no permission prompt follows.
    Deny(String),
}

/// External hooks around a call (PreToolUse / PostToolUse).
pub trait Hooks: Send + Sync {
    /// Runs before validation; may rewrite or refuse.
    fn before<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
        args: Value,
    ) -> BoxFuture<'a, BeforeHook>;

    /// Runs after output limits, seeing exactly what the caller will see; returns a reason
    /// when a hook blocked the result (the caller then gets that instead).
    fn after<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
        outcome: &'a Result<Value, ToolError>,
    ) -> BoxFuture<'a, Option<String>>;
}

/// No hooks configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoHooks;

impl Hooks for NoHooks {
    fn before<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a ToolDefinition,
        args: Value,
    ) -> BoxFuture<'a, BeforeHook> {
        Box::pin(async move { BeforeHook::Continue(args) })
    }

    fn after<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a ToolDefinition,
        _: &'a Result<Value, ToolError>,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }
}

/// A question for the permission engine: may `permission` be exercised on `patterns`?
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    /// The tool asking.
    pub tool: String,
    /// What kind of action (`edit`, `bash`, `read`…; a tool's own name for Handoff's tools).
    pub permission: String,
    /// What it acts on (paths, command parts); empty for a whole-tool decision.
    pub patterns: Vec<String>,
}

/// The permission engine's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// A human or the calling agent must approve first.
    Ask(String),
    /// Refused.
    Deny(String),
}

impl Decision {
    /// Turns the decision into the call's result; an unanswered `Ask` refuses.
    pub fn into_result(self, request: &PermissionRequest) -> Result<(), ToolError> {
        match self {
            Decision::Allow => Ok(()),
            Decision::Deny(reason) => Err(ToolError::Denied {
                tool: request.tool.clone(),
                reason,
            }),
            Decision::Ask(reason) => Err(ToolError::Denied {
                tool: request.tool.clone(),
                reason: format!("approval required and no approver is available: {reason}"),
            }),
        }
    }
}

/// Decides which tools an agent sees and whether a call may run.
pub trait PermissionPolicy: Send + Sync {
    /// Whether `tool` appears in this agent's `tools/list` (and may be called at all).
    fn visible(&self, agent: Option<&AgentId>, tool: &ToolDefinition) -> bool;

    /// Decides one request.
    fn decide<'a>(
        &'a self,
        ctx: &'a ToolContext,
        request: &'a PermissionRequest,
    ) -> BoxFuture<'a, Decision>;
}

/// Every tool visible, every call allowed: the policy before any rules are configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl PermissionPolicy for AllowAll {
    fn visible(&self, _: Option<&AgentId>, _: &ToolDefinition) -> bool {
        true
    }

    fn decide<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a PermissionRequest,
    ) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Allow })
    }
}

/// Caps what a tool returns to its caller (truncation with spill-to-disk).
pub trait OutputLimiter: Send + Sync {
    /// Returns the output the caller will see.
    fn limit(&self, ctx: &ToolContext, tool: &ToolDefinition, output: Value) -> Value;

    /// Returns the text the caller will see (unchanged unless a cap says otherwise).
    fn limit_text(&self, _ctx: &ToolContext, _tool: &ToolDefinition, text: String) -> String {
        text
    }

    /// The caps `tool`'s results meet, told to the tool so one that pages on its own can size
    /// its pages to pass whole; `None`: no cap.
    fn limits(&self, _tool: &ToolDefinition) -> Option<handoff_policy::output::Limits> {
        None
    }
}

/// No output cap.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unlimited;

impl OutputLimiter for Unlimited {
    fn limit(&self, _: &ToolContext, _: &ToolDefinition, output: Value) -> Value {
        output
    }
}

/// Charges callers for the calls that fail through their own fault, so a stream of invalid
/// calls meets a rate limit like a stream of submissions does.
pub trait FailureRate: Send + Sync {
    /// Takes one token from `agent`'s bucket (`None`: the callers with no identity, together);
    /// `Err` with the wait until the next token when the bucket is empty.
    fn charge<'a>(&'a self, agent: Option<&'a AgentId>) -> BoxFuture<'a, Result<(), Duration>>;
}

/// The stage an [`AuditEntry`] names when the failed-call rate limit refused the call.
pub const RATE_LIMIT_STAGE: &str = "rate_limit";

/// Failed calls cost nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unmetered;

impl FailureRate for Unmetered {
    fn charge<'a>(&'a self, _: Option<&'a AgentId>) -> BoxFuture<'a, Result<(), Duration>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// One finished call, for the audit trail (no payloads: they may hold secrets; every text
/// the caller supplied is bounded).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// The call's id.
    pub call_id: String,
    /// The tool's canonical name (or the unknown name asked for).
    pub tool: String,
    /// The effective caller.
    pub agent_id: Option<AgentId>,
    /// `ok` or the error code.
    pub outcome: &'static str,
    /// The stage that ended the call (`execute` when it ran; `loop_guard`, `hook`,
    /// `validate`, `permission`, `after_hook` when one of them refused; [`RATE_LIMIT_STAGE`]
    /// when the call failed and its caller had no failed calls left).
    pub stage: &'static str,
    /// Why it was refused, or the permission verdict that let it run.
    pub reason: Option<String>,
    /// The task the call was about (its `task_id` argument).
    pub task_id: Option<String>,
    /// Wall time spent in the pipeline.
    pub elapsed: Duration,
}

/// Where audit entries go.
pub trait AuditSink: Send + Sync {
    /// Records one finished call.
    fn record(&self, entry: AuditEntry);
}

/// Audit entries as structured log lines (target `handoff::audit`).
#[derive(Debug, Default, Clone, Copy)]
pub struct TracingAudit;

impl TracingAudit {
    /// Logs `entry` (the sinks that also store it log it without a copy).
    pub fn log(entry: &AuditEntry) {
        tracing::info!(
            target: "handoff::audit",
            call_id = %entry.call_id,
            tool = %entry.tool,
            agent_id = entry.agent_id.as_ref().map(AgentId::as_str),
            outcome = entry.outcome,
            stage = entry.stage,
            reason = entry.reason.as_deref(),
            elapsed_ms = entry.elapsed.as_millis() as u64,
            "tool call"
        );
    }
}

impl AuditSink for TracingAudit {
    fn record(&self, entry: AuditEntry) {
        Self::log(&entry);
    }
}
