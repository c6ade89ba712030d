use std::sync::Arc;

use handoff_task::TaskId;
use handoff_tools::{
    AgentId, Pipeline, ProgressReporter, TaskObserver, builtin::VERSION, handles::TaskHandles,
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

use super::{
    CallSite, ElicitationRelay,
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
pub(super) const TASK_TOOL: &str = handoff_protocol::names::EXECUTE_TASK;

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
    pub(super) pipeline: Pipeline,
    pub(super) handles: TaskHandles,
    /// Asks session clients that can elicit for their tasks' answers.
    relay: Arc<ElicitationRelay>,
    /// Identity for transports without headers (stdio).
    default_agent: Option<AgentId>,
    /// The agent a caller that establishes and names none acts as (`auth.default_agent`).
    pub(super) fallback_agent: Option<AgentId>,
    /// `tools/list` answers, serialised.
    pub(super) lists: Arc<ToolLists>,
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
    pub(super) fn principal_of(&self, identity: &CallerIdentity) -> Option<Principal> {
        match (identity.operator, &identity.agent) {
            (true, Some(name)) => Some(Principal::Operator(name.clone())),
            (_, agent) => agent
                .clone()
                .or_else(|| self.fallback_agent.clone())
                .map(Principal::Agent),
        }
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
    let value = parts
        .headers
        .get(crate::headers::SESSION_ID)?
        .to_str()
        .ok()?;
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
