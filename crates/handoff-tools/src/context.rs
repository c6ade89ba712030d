use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use handoff_task::{Principal, Task, TaskId};

use crate::{
    AgentId, ToolError,
    follow_up::{FollowUp, FollowUps},
    pipeline::PermissionRequest,
};

/// Sends progress for one call back to its caller (MCP `notifications/progress`).
pub trait ProgressReporter: Send + Sync {
    /// Reports that `progress` (monotonically increasing) of `total` is done.
    fn report(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> BoxFuture<'_, ()>;
}

/// For callers that asked for no progress.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl ProgressReporter for NoProgress {
    fn report(&self, _: f64, _: Option<f64>, _: Option<String>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Told about each task a call creates, as soon as it is stored — before a `sync` call starts
/// waiting (the transport's elicitation relay follows it from then on).
pub trait TaskObserver: Send + Sync {
    /// `task` of `agent` now exists.
    fn created(&self, agent: &AgentId, task: &TaskId);
}

/// Everything a tool knows about the call it is serving.
#[derive(Clone)]
pub struct ToolContext {
    /// Unique id of this call (audit, spill file names).
    pub call_id: String,
    /// The transport's request id (JSON-RPC id), for logs.
    pub request_id: String,
    /// The caller's identity: set by the edge (token, `x-agent-id`, stdio flag), then settled
    /// by the pipeline before any stage reads it (an `agent_id` argument may only repeat it, or
    /// choose one when it is unset; the fallback agent fills it for tools that take one).
    pub agent_id: Option<AgentId>,
    /// The edge authenticated an operator (`agent_id` is its name): it sees and steers every
    /// task, and an `agent_id` argument names whose tasks it acts on.
    pub operator: bool,
    /// The agent a caller that establishes no identity and names none acts as.
    pub fallback_agent: Option<AgentId>,
    /// Transport session, when the protocol era has one.
    pub session_id: Option<String>,
    /// Cancelled when the caller cancels or disconnects.
    pub cancel: CancellationToken,
    /// When the call must be finished by.
    pub deadline: Option<Instant>,
    /// The caller takes a protocol task handle (MCP Tasks) and polls: nothing waits in the call.
    pub task_handle: bool,
    progress: Arc<dyn ProgressReporter>,
    progress_step: Arc<AtomicU64>,
    task_observer: Option<Arc<dyn TaskObserver>>,
    permissions: Option<Arc<dyn crate::pipeline::PermissionPolicy>>,
    follow_ups: Option<Arc<dyn FollowUps>>,
    output_limits: Option<handoff_policy::output::Limits>,
    result_meta: ResultMeta,
}

/// Protocol-level facts about a call's result (MCP `_meta`), filled in by the pipeline's stages
/// (truncation) and read by the transport; shared by every clone of one call's context.
#[derive(Clone, Default)]
pub struct ResultMeta(Arc<std::sync::Mutex<serde_json::Map<String, serde_json::Value>>>);

impl ResultMeta {
    /// Sets `key`.
    pub fn set(&self, key: &str, value: serde_json::Value) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key.to_owned(), value);
    }

    /// Everything set so far.
    pub fn snapshot(&self) -> serde_json::Map<String, serde_json::Value> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl ToolContext {
    /// A context for one call.
    pub fn new(call_id: impl Into<String>, request_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            request_id: request_id.into(),
            agent_id: None,
            operator: false,
            fallback_agent: None,
            session_id: None,
            cancel: CancellationToken::new(),
            deadline: None,
            task_handle: false,
            progress: Arc::new(NoProgress),
            progress_step: Arc::new(AtomicU64::new(0)),
            task_observer: None,
            permissions: None,
            follow_ups: None,
            output_limits: None,
            result_meta: ResultMeta::default(),
        }
    }

    /// Who calls: the operator the edge authenticated, else the agent (the edge's identity, an
    /// `agent_id` argument the pipeline accepted, or the configured fallback), else nobody.
    /// The one answer tools take the caller from.
    pub fn principal(&self) -> Option<Principal> {
        if self.operator {
            return self.agent_id.clone().map(Principal::Operator);
        }
        self.agent_id
            .clone()
            .or_else(|| self.fallback_agent.clone())
            .map(Principal::Agent)
    }

    /// The result's protocol metadata, shared with every clone of this context.
    pub fn result_meta(&self) -> &ResultMeta {
        &self.result_meta
    }

    /// Sets the caller's identity.
    pub fn with_agent(mut self, agent_id: Option<AgentId>) -> Self {
        self.agent_id = agent_id;
        self
    }

    /// Marks the caller as an operator named by `agent_id`.
    pub fn with_operator(mut self, operator: bool) -> Self {
        self.operator = operator;
        self
    }

    /// Sets the agent a caller that names none acts as.
    pub fn with_fallback_agent(mut self, agent: Option<AgentId>) -> Self {
        self.fallback_agent = agent;
        self
    }

    /// Sets the transport session.
    pub fn with_session(mut self, session_id: Option<String>) -> Self {
        self.session_id = session_id;
        self
    }

    /// Sets the cancellation token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets the deadline.
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// Marks a call whose caller takes a task handle instead of waiting.
    pub fn with_task_handle(mut self, task_handle: bool) -> Self {
        self.task_handle = task_handle;
        self
    }

    /// Sets who hears about the tasks this call creates.
    pub fn with_task_observer(mut self, observer: Arc<dyn TaskObserver>) -> Self {
        self.task_observer = Some(observer);
        self
    }

    /// Tells the observer (if any) that `task` of `agent` was stored.
    pub fn task_created(&self, agent: &AgentId, task: &TaskId) {
        if let Some(observer) = &self.task_observer {
            observer.created(agent, task);
        }
    }

    /// Sets where progress goes.
    pub fn with_progress(mut self, progress: Arc<dyn ProgressReporter>) -> Self {
        self.progress = progress;
        self
    }

    pub(crate) fn with_permissions(
        mut self,
        permissions: Arc<dyn crate::pipeline::PermissionPolicy>,
    ) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Sets who knows what tasks' owners hear without asking.
    pub fn with_follow_ups(mut self, follow_ups: Arc<dyn FollowUps>) -> Self {
        self.follow_ups = Some(follow_ups);
        self
    }

    /// Sets the caps this call's result will meet (the pipeline's output limiter's).
    pub fn with_output_limits(mut self, limits: Option<handoff_policy::output::Limits>) -> Self {
        self.output_limits = limits;
        self
    }

    /// The caps this call's result will meet, for a tool that sizes its pages to pass them
    /// whole; `None`: uncapped.
    pub fn output_limits(&self) -> Option<handoff_policy::output::Limits> {
        self.output_limits
    }

    /// What the owner of `task` hears about it without asking (nothing when no integration
    /// says otherwise).
    pub fn follow_up(&self, task: &Task) -> FollowUp {
        self.follow_ups
            .as_ref()
            .map(|f| f.for_task(task))
            .unwrap_or_default()
    }

    /// Reports a progress step to the caller; steps are numbered in call order.
    pub async fn progress(&self, message: impl Into<String>) {
        let step = self.progress_step.fetch_add(1, Ordering::SeqCst) + 1;
        self.progress
            .report(step as f64, None, Some(message.into()))
            .await;
    }

    /// Asks the permission engine whether an action inside this tool may proceed.
    pub async fn ask(&self, request: PermissionRequest) -> Result<(), ToolError> {
        let Some(permissions) = &self.permissions else {
            return Err(ToolError::Denied {
                tool: request.tool.clone(),
                reason: "no permission engine is attached to this call".to_owned(),
            });
        };
        permissions
            .decide(self, &request)
            .await
            .into_result(&request)
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("request_id", &self.request_id)
            .field("agent_id", &self.agent_id)
            .field("session_id", &self.session_id)
            .field("deadline", &self.deadline)
            .field("task_handle", &self.task_handle)
            .finish_non_exhaustive()
    }
}
