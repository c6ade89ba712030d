//! The live web dashboard at `/`: server-rendered pages (maud), a small script and stylesheet
//! embedded in the binary, live updates over SSE. Every read and every action is a call of the
//! same tools, through the same pipeline, as an MCP client's, made as the operator who is
//! looking; nothing here writes to the engine directly.
//!
//! Access: off (404) unless an operator token is configured, or the server is bound to loopback
//! with no tokens at all (then every local viewer is the operator `dashboard`). Host and Origin
//! are checked as on `/mcp`; state changes are POST only, same-origin (or carry the form's CSRF
//! token), and their bodies are capped.

mod actions;
mod assets;
mod auth;
mod calls;
mod diff;
mod diff_parse;
mod diff_part;
mod forms;
mod list;
mod live;
mod new_task;
mod pages;
mod review;
mod task_view;
mod views;

use std::{path::PathBuf, sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use handoff_config::ServerConfig;
use handoff_engine::Engine;
use handoff_tools::Pipeline;
use http::{Method, StatusCode};
use tokio_util::sync::CancellationToken;

pub(crate) use auth::{Access, random_token};
use auth::{Refusal, Sessions};

use crate::edge::{self, EdgePolicy};

/// How long a login lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// At most this many logins are remembered; the oldest gives way to a new one.
const MAX_SESSIONS: usize = 64;
/// Form and JSON bodies of the dashboard's actions are far smaller than `/mcp`'s.
const MAX_FORM_BYTES: usize = 128 * 1024;

/// What every dashboard handler shares.
pub(crate) struct Dashboard {
    /// Who may look.
    access: Access,
    /// The tool pipeline every read and action goes through.
    tools: calls::Tools,
    /// Task notices that wake the live streams.
    engine: Engine,
    /// Token lookups (the same tokens `/mcp` accepts).
    policy: Arc<EdgePolicy>,
    /// Logged-in operators.
    sessions: Sessions,
    /// The CSRF token of an open (loopback, tokenless) dashboard; `None`: none could be made,
    /// so only same-origin requests change anything.
    open_csrf: Option<String>,
    /// Cookies carry `Secure` when the server is reached over HTTPS.
    secure_cookies: bool,
    /// The body cap of the actions.
    max_body: usize,
    /// Ends the live streams when the server stops, so shutdown need not wait for them.
    shutdown: CancellationToken,
    /// The directories the new-task form offers to work in (`tasks.workdir_roots`).
    workdir_roots: Vec<String>,
}

/// The dashboard's routes: the pages and actions when it is on, else a one-line 404 on each
/// of its paths. Host and Origin are checked like `/mcp`'s either way. `workdir_roots`: the
/// directories a task may be given (the new-task form offers them).
pub(crate) fn router(
    server: &ServerConfig,
    workdir_roots: &[PathBuf],
    pipeline: Pipeline,
    engine: Engine,
    policy: Arc<EdgePolicy>,
    shutdown: &CancellationToken,
) -> Router {
    let access = Access::from_config(server);
    let routes = if access == Access::Off {
        Router::new()
            .route("/", get(off))
            .route("/login", get(off).post(off))
            .route("/logout", post(off))
            .route("/events", get(off))
            .route("/new", get(off).post(off))
            .route("/tasks/{*rest}", get(off).post(off))
            .route("/assets/{*rest}", get(off))
    } else {
        let dashboard = Arc::new(Dashboard {
            open_csrf: auth::random_token(),
            access,
            tools: calls::Tools::new(pipeline),
            engine,
            policy: policy.clone(),
            sessions: Sessions::new(SESSION_TTL, MAX_SESSIONS),
            secure_cookies: server
                .public_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://")),
            max_body: policy.max_body_bytes().min(MAX_FORM_BYTES),
            shutdown: shutdown.child_token(),
            workdir_roots: workdir_roots
                .iter()
                .map(|root| root.display().to_string())
                .collect(),
        });
        let viewing = Router::new()
            .route("/", get(list::task_list))
            .route("/events", get(live::list_events))
            .route("/new", get(new_task::form).post(new_task::submit))
            .route("/tasks/{id}", get(pages::task_page))
            .route("/tasks/{id}/events", get(live::task_events))
            .route("/tasks/{id}/files", get(pages::files))
            .route("/tasks/{id}/file", get(pages::file))
            .route("/tasks/{id}/control", post(actions::control))
            .route("/tasks/{id}/approve", post(actions::approve))
            .route("/tasks/{id}/message", post(actions::message))
            .route("/logout", post(actions::logout))
            .layer(middleware::from_fn_with_state(
                dashboard.clone(),
                require_viewer,
            ));
        Router::new()
            .route("/login", get(pages::login_form).post(actions::login))
            .route("/assets/dashboard.js", get(assets::script))
            .route("/assets/dashboard.css", get(assets::stylesheet))
            .merge(viewing)
            .with_state(dashboard)
    };
    routes.layer(middleware::from_fn_with_state(policy, edge::host_guard))
}

/// The answer on every dashboard path while it is off.
async fn off() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "The dashboard is off: configure an operator token (auth.tokens, role operator), or serve on loopback with no tokens.\n",
    )
        .into_response()
}

/// Decides who is looking and hands it to the handler; a page asked for without a login goes
/// to the login form, anything else is refused with the reason.
async fn require_viewer(
    State(dashboard): State<Arc<Dashboard>>,
    mut request: Request,
    next: Next,
) -> Response {
    match auth::identify(&dashboard, request.headers()) {
        Ok(viewer) => {
            request.extensions_mut().insert(viewer);
            next.run(request).await
        }
        Err(Refusal::NotLoggedIn)
            if request.method() == Method::GET && wants_html(request.headers()) =>
        {
            Redirect::to("/login").into_response()
        }
        Err(refusal) => views::error_page(refusal.status(), refusal.message()),
    }
}

/// Whether the client asked for a page (a browser) rather than data (a script, EventSource).
fn wants_html(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"))
}
