use std::sync::Arc;

use handoff_tools::{AgentId, CallRequest, Pipeline, ToolContext, builtin::VERSION};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
};

use super::{
    convert::{outcome_to_wire, tool_to_wire},
    progress::PeerProgress,
};
use crate::edge::CallerIdentity;

const INSTRUCTIONS: &str = "Handoff hands development tasks to a coding agent and follows each \
task to a verified end. Call `health` to see what this instance can do.";

/// Handoff's MCP server: every `tools/*` request goes through the tool pipeline.
#[derive(Clone)]
pub struct HandoffMcp {
    pipeline: Pipeline,
    /// Identity for transports without headers (stdio).
    default_agent: Option<AgentId>,
}

impl HandoffMcp {
    /// A handler over `pipeline`; `default_agent` applies where no `x-agent-id` header exists.
    pub fn new(pipeline: Pipeline, default_agent: Option<AgentId>) -> Self {
        Self {
            pipeline,
            default_agent,
        }
    }

    /// The caller's identity: the edge-validated `x-agent-id` header, else the default.
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Option<AgentId> {
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<CallerIdentity>())
            .and_then(|identity| identity.0.clone())
            .or_else(|| self.default_agent.clone())
    }
}

fn session_id(ctx: &RequestContext<RoleServer>) -> Option<String> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    let value = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    Some(value.to_owned())
}

impl ServerHandler for HandoffMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("handoff", VERSION).with_title("Handoff"))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let agent = self.caller(&ctx);
        let tools = self
            .pipeline
            .list(agent.as_ref())
            .iter()
            .map(tool_to_wire)
            .collect();
        Ok(ListToolsResult {
            tools,
            ..ListToolsResult::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut tool_ctx = ToolContext::new(
            uuid::Uuid::new_v4().simple().to_string(),
            ctx.id.to_string(),
        )
        .with_agent(self.caller(&ctx))
        .with_session(session_id(&ctx))
        .with_cancel(ctx.ct.clone());
        if let Some(token) = ctx.meta.get_progress_token() {
            tool_ctx = tool_ctx.with_progress(Arc::new(PeerProgress {
                peer: ctx.peer.clone(),
                token,
            }));
        }
        let call = CallRequest {
            name: request.name.into_owned(),
            arguments: request.arguments,
        };
        let outcome = self.pipeline.call(tool_ctx, call).await;
        outcome_to_wire(outcome).map(CallToolResponse::from)
    }
}
