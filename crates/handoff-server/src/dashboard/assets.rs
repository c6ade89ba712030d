//! The script and stylesheet, compiled into the binary: no build step, no CDN.

use axum::response::{IntoResponse, Response};
use http::header;

/// The dashboard's script: live updates from SSE.
const SCRIPT: &str = include_str!("assets/dashboard.js");
/// The dashboard's stylesheet.
const STYLESHEET: &str = include_str!("assets/dashboard.css");

/// `GET /assets/dashboard.js`.
pub(crate) async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /assets/dashboard.css`.
pub(crate) async fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", STYLESHEET)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}
