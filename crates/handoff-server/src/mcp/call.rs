//! One `tools/call` through the pipeline, shaped for the wire: the code rmcp's handler and the
//! requests answered before rmcp ([`super::direct`]) share. Nothing here outlives the call.

use std::sync::Arc;

use bytes::Bytes;
use handoff_task::TaskId;
use handoff_tools::{AgentId, CallRequest, ProgressReporter, TaskObserver, ToolContext};
use rmcp::{
    ErrorData as McpError,
    model::{CallToolRequestParams, CallToolResponse},
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{HandoffMcp, convert::outcome_to_wire, handler::TASK_TOOL, tasks};
use crate::edge::CallerIdentity;

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
        let mut tool_ctx = ToolContext::new(crate::call_id::next(), site.request_id)
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
