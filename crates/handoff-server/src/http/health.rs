use std::sync::Arc;

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use handoff_tools::builtin::ServiceStatus;

/// `GET /health`: the full report; always 200 while the process serves (liveness).
pub(crate) async fn health(State(status): State<Arc<ServiceStatus>>) -> impl IntoResponse {
    Json(status.report())
}

/// `GET /ready`: 200 when every component is ready, else 503 with the report (readiness).
pub(crate) async fn ready(State(status): State<Arc<ServiceStatus>>) -> impl IntoResponse {
    let code = if status.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(status.report()))
}
