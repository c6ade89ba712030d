use std::sync::Arc;

use bytes::Bytes;
use handoff_task::TaskId;
use handoff_tools::{
    AgentId, CallRequest, Pipeline, ProgressReporter, TaskObserver, ToolContext, builtin::VERSION,
    handles::TaskHandles,
};
use rmcp::{
    ErrorData as McpError, Peer, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
        ErrorCode, GetTaskParams, GetTaskResult, Implementation, ListToolsResult,
        PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
        UpdateTaskParams,
    },
    service::RequestContext,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    ElicitationRelay,
    convert::outcome_to_wire,
    lists::{self, ToolLists},
    progress::PeerProgress,
    tasks,
};
use crate::edge::{
    CallerIdentity, DroppedParams,
    diagnose::{self, ParamsCheck},
};
use handoff_task::Principal;

/// The tool whose calls become protocol-level tasks for clients that declare the extension.
const TASK_TOOL: &str = "execute_task";

const INSTRUCTIONS: &str = "Handoff hands development tasks to a coding agent and follows each \
task to a verified end. Call `health` to see what this instance can do.";

/// Hands each task an elicitation-capable session client creates to the relay.
struct RelayObserver {
    relay: Arc<ElicitationRelay>,
    peer: Peer<RoleServer>,
}

impl TaskObserver for RelayObserver {
    fn created(&self, agent: &AgentId, task: &TaskId) {
        self.relay
            .follow(task.clone(), agent.clone(), self.peer.clone());
    }
}

/// Handoff's MCP server: every `tools/*` request goes through the tool pipeline; `tasks/*`
/// (the Tasks extension) read and steer Handoff's own durable tasks.
#[derive(Clone)]
pub struct HandoffMcp {
    pipeline: Pipeline,
    handles: TaskHandles,
    /// Asks session clients that can elicit for their tasks' answers.
    relay: Arc<ElicitationRelay>,
    /// Identity for transports without headers (stdio).
    default_agent: Option<AgentId>,
    /// The agent a caller that establishes and names none acts as (`auth.default_agent`).
    fallback_agent: Option<AgentId>,
    /// `tools/list` answers, serialised.
    lists: Arc<ToolLists>,
}

impl HandoffMcp {
    /// A handler over `pipeline` and `handles`; `default_agent` applies where no `x-agent-id`
    /// header exists.
    pub(crate) fn new(
        pipeline: Pipeline,
        handles: TaskHandles,
        relay: Arc<ElicitationRelay>,
        default_agent: Option<AgentId>,
        fallback_agent: Option<AgentId>,
    ) -> Self {
        Self {
            pipeline,
            handles,
            relay,
            default_agent,
            fallback_agent,
            lists: Arc::default(),
        }
    }

    /// The caller's identity as the edge decided it, else the transport's default (stdio).
    fn identity(&self, ctx: &RequestContext<RoleServer>) -> CallerIdentity {
        let edge = ctx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<CallerIdentity>())
            .cloned()
            .unwrap_or_default();
        CallerIdentity {
            agent: edge.agent.or_else(|| self.default_agent.clone()),
            operator: edge.operator,
        }
    }

    /// The caller as a principal, for the MCP Tasks methods: an operator, else the agent the
    /// edge established (or the configured default).
    fn principal(&self, ctx: &RequestContext<RoleServer>) -> Option<Principal> {
        self.principal_of(&self.identity(ctx))
    }

    /// A caller as a principal: an operator, else its agent (or the configured default).
    fn principal_of(&self, identity: &CallerIdentity) -> Option<Principal> {
        match (identity.operator, &identity.agent) {
            (true, Some(name)) => Some(Principal::Operator(name.clone())),
            (_, agent) => agent
                .clone()
                .or_else(|| self.fallback_agent.clone())
                .map(Principal::Agent),
        }
    }
}

/// What a tool call needs from the transport that carried it.
pub(crate) struct CallSite {
    /// The caller as the edge decided it.
    pub(crate) identity: CallerIdentity,
    /// The MCP session the call came in, if any.
    pub(crate) session: Option<String>,
    /// The JSON-RPC request id, as text.
    pub(crate) request_id: String,
    /// Fires when the caller gives up on the call.
    pub(crate) cancel: CancellationToken,
    /// Whether an `execute_task` answer becomes a task handle (Tasks extension).
    pub(crate) as_task: bool,
    /// Told of each task the call creates (elicitation relay).
    pub(crate) observer: Option<Arc<dyn TaskObserver>>,
    /// Where the call's progress goes.
    pub(crate) progress: Option<Arc<dyn ProgressReporter>>,
}

impl HandoffMcp {
    /// Runs one `tools/call` through the pipeline and shapes its answer for the wire.
    pub(crate) async fn run_call(
        &self,
        site: CallSite,
        request: CallToolRequestParams,
    ) -> Result<CallToolResponse, McpError> {
        let caller = self.principal_of(&site.identity);
        let mut tool_ctx =
            ToolContext::new(uuid::Uuid::new_v4().simple().to_string(), site.request_id)
                .with_agent(site.identity.agent)
                .with_operator(site.identity.operator)
                .with_fallback_agent(self.fallback_agent.clone())
                .with_session(site.session)
                .with_cancel(site.cancel)
                .with_task_handle(site.as_task);
        if let Some(observer) = site.observer {
            tool_ctx = tool_ctx.with_task_observer(observer);
        }
        if let Some(progress) = site.progress {
            tool_ctx = tool_ctx.with_progress(progress);
        }
        let call = CallRequest {
            name: request.name.into_owned(),
            arguments: request.arguments,
        };
        let meta = tool_ctx.result_meta().clone();
        let outcome = self.pipeline.reply(tool_ctx, call).await;
        let created = outcome
            .as_ref()
            .ok()
            .and_then(|reply| reply.output.get("task_id"))
            .and_then(Value::as_str)
            .and_then(|id| TaskId::parse(id).ok());
        if let (Some(id), Some(caller), true) = (&created, caller, site.as_task) {
            // Stored before submit returned, so the handle is durable; a task this caller could
            // not poll gets the plain result.
            match self.handles.get(&caller, id.as_str()).await {
                Ok(handle) => return Ok(CallToolResponse::Task(tasks::created(&handle))),
                Err(error) => tracing::debug!(task = %id, %error, "no task handle"),
            }
        }
        let mut result = outcome_to_wire(outcome)?;
        let meta = meta.snapshot();
        if !meta.is_empty() {
            // Beside an error result's own entry.
            let mut merged = result.meta.take().map(|m| m.0).unwrap_or_default();
            merged.extend(meta);
            result.meta = Some(rmcp::model::MetaObject(merged));
        }
        Ok(CallToolResponse::from(result))
    }

    /// Whether a call may be answered without rmcp's session worker: a read-only tool that
    /// finishes at once, with nothing to send but its answer (no task to follow, no input
    /// responses; the caller checks the request's `_meta` for a progress token). Anything
    /// else keeps rmcp's cancellation and server-to-client messages.
    pub(crate) fn answers_inline(&self, request: &CallToolRequestParams) -> bool {
        let quick = self
            .pipeline
            .definition(&request.name)
            .is_some_and(|def| def.annotations.read_only && def.name != TASK_TOOL);
        quick && request.input_responses.is_none() && request.request_state.is_none()
    }

    /// The `tools/list` result `agent` sees (in the 2026-07-28 shape when `modern`),
    /// serialised once per set of visible tools.
    pub(crate) fn tool_list(&self, agent: Option<&AgentId>, modern: bool) -> Option<Bytes> {
        self.lists.get(&self.pipeline, agent, modern)
    }
}

/// rmcp hands over as custom any request it could not read: an unknown method, or a known one
/// whose params do not fit. The first is `-32601`; the second `-32602` naming the field.
fn custom_request_error(method: &str, params: Option<&Value>) -> McpError {
    match diagnose::params_check(method, params) {
        ParamsCheck::UnknownMethod => McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: `{}`", diagnose::excerpt(method)),
            None,
        ),
        ParamsCheck::Invalid(problem) => {
            McpError::invalid_params(format!("{method}: {problem}"), None)
        }
        ParamsCheck::Valid => McpError::invalid_params(
            format!("{method}: params do not match the method's schema"),
            None,
        ),
    }
}

fn session_id(ctx: &RequestContext<RoleServer>) -> Option<String> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    let value = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    Some(value.to_owned())
}

impl ServerHandler for HandoffMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("handoff", VERSION).with_title("Handoff"))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if let Some(DroppedParams(problem)) = ctx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<DroppedParams>())
        {
            return Err(McpError::invalid_params(
                format!("tools/list: {problem}"),
                None,
            ));
        }
        let agent = self.identity(&ctx).agent;
        Ok(lists::list_result(&self.pipeline, agent.as_ref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let identity = self.identity(&ctx);
        // The server alone decides: only execute_task becomes a task, and only for a
        // 2026-07-28 request that declares the extension. Legacy sessions keep the tool flow
        // even when they listed the extension at initialize: clients such as the Inspector
        // advertise it there but cannot read a task handle in that era.
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let task_tool = self.pipeline.canonical_name(&request.name) == Some(TASK_TOOL);
        let as_task = modern
            && task_tool
            && ctx
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
        // Server-to-client requests exist only in the session eras.
        let elicits = task_tool
            && !modern
            && ctx.peer.peer_info().is_some()
            && !ctx.peer.supported_elicitation_modes().is_empty();
        let observer = elicits.then(|| {
            Arc::new(RelayObserver {
                relay: self.relay.clone(),
                peer: ctx.peer.clone(),
            }) as Arc<dyn TaskObserver>
        });
        let progress = ctx.meta.get_progress_token().map(|token| {
            Arc::new(PeerProgress {
                peer: ctx.peer.clone(),
                token,
            }) as Arc<dyn ProgressReporter>
        });
        let site = CallSite {
            identity,
            session: session_id(&ctx),
            request_id: ctx.id.to_string(),
            cancel: ctx.ct.clone(),
            as_task,
            observer,
            progress,
        };
        self.run_call(site, request).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(custom_request_error(
            &request.method,
            request.params.as_ref(),
        ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let agent = tasks::require_agent(self.principal(&ctx), &request.task_id)?;
        let handle = self
            .handles
            .get(&agent, &request.task_id)
            .await
            .map_err(tasks::to_mcp)?;
        tasks::detailed(&handle)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let agent = tasks::require_agent(self.principal(&ctx), &request.task_id)?;
        tasks::update(
            &self.handles,
            &agent,
            &request.task_id,
            request.input_responses,
        )
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let agent = tasks::require_agent(self.principal(&ctx), &request.task_id)?;
        self.handles
            .cancel(&agent, &request.task_id)
            .await
            .map_err(tasks::to_mcp)
    }
}
