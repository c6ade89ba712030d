//! `GET /health` and `GET /ready`: readiness for probes, without the details a caller who
//! presents no token should not learn (the data path, the MCP address, installed executors).
//! The full report stays with the `health` tool on `/mcp` and `handoff doctor`.

use std::sync::Arc;

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use handoff_tools::builtin::{HealthReport, InstanceReport, ServiceStatus, TaskCounts};
use serde::Serialize;

/// One subsystem's readiness, without its detail line.
#[derive(Debug, Serialize)]
struct PublicComponent {
    name: String,
    ready: bool,
}

/// The health report as unauthenticated probes see it.
#[derive(Debug, Serialize)]
struct PublicReport {
    status: String,
    server: String,
    version: String,
    uptime_ms: u64,
    started_at_ms: u64,
    components: Vec<PublicComponent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tasks: Option<TaskCounts>,
    /// Instance ids, heartbeats and loads: what an operator's probe needs to see a lost
    /// instance, nothing about what runs where.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    instances: Vec<InstanceReport>,
}

impl From<HealthReport> for PublicReport {
    fn from(report: HealthReport) -> Self {
        Self {
            status: report.status,
            server: report.server,
            version: report.version,
            uptime_ms: report.uptime_ms,
            started_at_ms: report.started_at_ms,
            // Detail lines carry paths, addresses and what is installed: left out.
            components: report
                .components
                .into_iter()
                .map(|c| PublicComponent {
                    name: c.name,
                    ready: c.ready,
                })
                .collect(),
            tasks: report.tasks,
            instances: report.instances,
        }
    }
}

/// `GET /health`: the public report; always 200 while the process serves (liveness).
pub(crate) async fn health(State(status): State<Arc<ServiceStatus>>) -> impl IntoResponse {
    Json(PublicReport::from(status.report()))
}

/// `GET /ready`: 200 when every component is ready, else 503, with the public report.
pub(crate) async fn ready(State(status): State<Arc<ServiceStatus>>) -> impl IntoResponse {
    let code = if status.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(PublicReport::from(status.report())))
}
