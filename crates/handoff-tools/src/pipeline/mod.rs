//! The one pipeline every tool call passes through, and the seams its stages are built from.

mod identity;
mod run;
mod seams;

pub use run::{CallOutcome, CallRequest, Pipeline, PipelineBuilder, ReplyOutcome};
pub use seams::{
    AllowAll, AuditEntry, AuditSink, BeforeHook, Decision, FailureRate, GuardVerdict, Hooks,
    LoopGuard, NoHooks, NoLoopGuard, OutputLimiter, PermissionPolicy, PermissionRequest,
    RATE_LIMIT_STAGE, TracingAudit, Unlimited, Unmetered,
};
