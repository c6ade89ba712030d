//! `GET /metrics` (Prometheus text format) and the MCP request counter.

use axum::{
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family},
    registry::Registry,
};

use crate::{App, edge::RpcMethod, mcp::SessionMetrics};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    outcome: &'static str,
}

/// MCP requests by JSON-RPC method and HTTP outcome.
#[derive(Debug, Clone, Default)]
pub(crate) struct McpMetrics {
    requests: Family<RequestLabels, Counter>,
    /// The legacy sessions' gauges, kept by the session book.
    pub(crate) sessions: SessionMetrics,
}

impl McpMetrics {
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "handoff_mcp_requests",
            "MCP requests by JSON-RPC method and outcome (ok, rejected = 4xx, error = 5xx)",
            metrics.requests.clone(),
        );
        registry.register(
            "handoff_mcp_sessions_open",
            "legacy (session-era) MCP sessions open now",
            metrics.sessions.open.clone(),
        );
        registry.register(
            "handoff_mcp_sessions_displaced",
            "legacy MCP sessions ended to make room for a new one (the caller's own least \
             recently active, or any session quiet for the unused timeout at the server's limit)",
            metrics.sessions.displaced.clone(),
        );
        metrics
    }
}

/// Counts an answer from `/mcp`, including those the edge guard refused.
pub(crate) fn count_request(metrics: &McpMetrics, response: &Response) {
    let method = response
        .extensions()
        .get::<RpcMethod>()
        .map_or("refused at edge", |m| m.0);
    let status = response.status();
    let outcome = if status.is_server_error() {
        "error"
    } else if status.is_client_error() {
        "rejected"
    } else {
        "ok"
    };
    metrics
        .requests
        .get_or_create(&RequestLabels { method, outcome })
        .inc();
}

/// `GET /metrics`: refreshes the task, Letta backlog and open Matrix room gauges from the
/// store, then encodes
/// every metric.
pub(crate) async fn metrics(State(app): State<App>) -> Response {
    app.refresh_task_counts().await;
    if let Some((letta, sync)) = &app.letta_metrics {
        letta.refresh(sync).await;
    }
    if let Some((matrix, bridge)) = &app.matrix_metrics {
        matrix.refresh(bridge).await;
    }
    app.pool_metrics.refresh();
    let mut text = String::new();
    let encoded = {
        let registry = app.metrics.lock().unwrap_or_else(|p| p.into_inner());
        prometheus_client::encoding::text::encode(&mut text, &registry)
    };
    match encoded {
        Ok(()) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
