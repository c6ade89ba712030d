//! The checks in front of the MCP service, as one middleware: every `/mcp` request is counted,
//! guarded at the edge (Host, Origin, token, identity, body cap and syntax), then either
//! answered at once (the plain requests of a complete session or of the 2026-07-28 era, see
//! [`crate::mcp::DirectAnswers`]) or has non-JSON errors rewritten and passes the session
//! limits on its way to rmcp. One layer, not four: each axum layer clones the service below it
//! on every request, and a Letta tool call is six requests.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};

use crate::{
    edge::{self, EdgePolicy},
    http::{McpMetrics, count_request},
    mcp::{CappedSessions, DirectAnswers, session_gate, stateless_initialize, unless_foreign},
};

/// What the `/mcp` checks read.
pub(crate) struct McpRoute {
    /// The request counts by method and outcome.
    pub metrics: McpMetrics,
    /// The edge rules.
    pub policy: Arc<EdgePolicy>,
    /// The session limits.
    pub sessions: Arc<CappedSessions>,
    /// The requests answered before rmcp.
    pub direct: DirectAnswers,
}

/// Runs a `/mcp` request through every check to the MCP service (`next`).
pub(crate) async fn mcp_checks(
    State(route): State<Arc<McpRoute>>,
    request: Request,
    next: Next,
) -> Response {
    let response = edge::guard(&route.policy, request, |request| async {
        if let Some(refused) = stateless_initialize(&request) {
            return refused;
        }
        let request = unless_foreign(&route.sessions, request);
        let request = match route.direct.answer(request).await {
            Ok(answer) => return answer,
            Err(request) => request,
        };
        edge::jsonrpc::jsonrpc_errors(request, |request| {
            session_gate(&route.sessions, request, |request| next.run(request))
        })
        .await
    })
    .await;
    count_request(&route.metrics, &response);
    response
}
