//! Binding, routing and shutdown.

use std::{net::SocketAddr, sync::Arc};

use axum::{Router, middleware, routing::get};
use handoff_tools::AgentId;
use rmcp::{
    ServiceExt,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{
    App,
    edge::{self, BadOriginRule, EdgePolicy},
    http::{McpRoute, health, mcp_checks, metrics, ready},
    mcp::{CappedSessions, DirectAnswers, SessionLimits, SharedMcpService},
};

/// Why a transport could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The edge policy is invalid.
    #[error(transparent)]
    Policy(#[from] BadOriginRule),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The server failed while running.
    #[error("server error: {0}")]
    Io(#[from] std::io::Error),
    /// The stdio MCP session failed to start.
    #[error("stdio transport: {0}")]
    Stdio(String),
}

/// The axum router: `/mcp` behind the edge guard, plus `/health`, `/ready`, `/metrics` and
/// the dashboard (`/`, see [`crate::dashboard`]) behind its Host and Origin checks.
pub fn router(app: &App, shutdown: &CancellationToken) -> Result<Router, ServeError> {
    let server = &app.config.server;
    let policy = Arc::new(EdgePolicy::from_config(server)?);
    let mut local = LocalSessionManager::default();
    // The book ends idle sessions: requests answered before rmcp never reach its worker.
    local.session_config.keep_alive = None;
    let sessions = CappedSessions::new(
        local,
        SessionLimits::from_config(server),
        app.mcp_metrics.sessions.clone(),
    );
    let mcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(server.allowed_hosts.clone())
        .with_allowed_origins(
            server
                .allowed_origins
                .iter()
                .chain(&server.cors_origins)
                .cloned(),
        )
        .enforce_origin_validation()
        .with_max_request_body_bytes(policy.max_body_bytes())
        .with_json_response(true)
        .with_cancellation_token(shutdown.child_token());
    let handler = app.mcp_handler(None, shutdown);
    let direct = DirectAnswers::new(sessions.clone(), handler.clone());
    let service = SharedMcpService::new(StreamableHttpService::new(
        move || Ok(handler.clone()),
        sessions.clone(),
        mcp_config,
    ));

    let checks = Arc::new(McpRoute {
        metrics: app.mcp_metrics.clone(),
        policy: policy.clone(),
        sessions,
        direct,
    });
    let mcp = Router::new()
        .fallback_service(service)
        .layer(middleware::from_fn_with_state(checks, mcp_checks));
    let mut mcp = Router::new().nest("/mcp", mcp);
    if let Some(cors) = edge::cors_layer(server) {
        mcp = mcp.layer(cors);
    }
    let plain = Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .with_state(app.status.clone());
    let metrics = Router::new()
        .route("/metrics", get(metrics))
        .with_state(app.clone());
    // Probes get no token check, but a DNS-rebinding page must not read them either.
    let probes = plain.merge(metrics).layer(middleware::from_fn_with_state(
        policy.clone(),
        edge::host_guard,
    ));
    let dashboard = crate::dashboard::router(
        server,
        &app.config.tasks.workdir_roots,
        app.pipeline.clone(),
        app.engine.clone(),
        policy.clone(),
        shutdown,
    );
    let gateway = crate::gateway::router(&app.config, &app.engine, policy)?;
    Ok(mcp.merge(probes).merge(dashboard).merge(gateway))
}

/// A running HTTP server.
#[derive(Debug)]
pub struct ServerHandle {
    /// The address actually bound (port 0 resolved).
    pub local_addr: SocketAddr,
    /// Finishes when the server has shut down.
    pub task: JoinHandle<Result<(), std::io::Error>>,
}

/// Binds and serves HTTP until `shutdown` is cancelled, then drains for the configured grace;
/// connections are capped and timed out as `server.*` says.
pub async fn serve_http(
    app: &App,
    shutdown: CancellationToken,
) -> Result<ServerHandle, ServeError> {
    let router = router(app, &shutdown)?;
    let addr = app.config.bind_address();
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local_addr = listener.local_addr()?;
    crate::gateway::open(&app.config, &app.engine, local_addr)?;
    app.start_pools();
    app.status
        .set_component("http", true, format!("MCP at http://{local_addr}/mcp"));
    let limits = crate::conn::Limits::from_config(&app.config.server);
    let task = tokio::spawn(crate::conn::serve(listener, router, limits, shutdown));
    Ok(ServerHandle { local_addr, task })
}

/// Serves MCP over stdin/stdout until the client closes the stream or `shutdown` fires; a
/// shutdown does not wait for stdin to close (see [`crate::stdio`]).
pub async fn serve_stdio(
    app: &App,
    agent: Option<AgentId>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    app.status.set_component("stdio", true, "MCP over stdio");
    // No listener, so no gateway: runs and pooled agents start with their own provider settings.
    app.engine.close_gateway();
    app.start_pools();
    let handler = app.mcp_handler(agent, &shutdown);
    let transport = crate::stdio::LineTransport::stdio();
    let running = match handler.serve_with_ct(transport, shutdown.clone()).await {
        Ok(running) => running,
        // Stopped before the client finished its handshake: a normal end.
        Err(_) if shutdown.is_cancelled() => return Ok(()),
        Err(e) => return Err(ServeError::Stdio(e.to_string())),
    };
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Stdio(e.to_string()))?;
    Ok(())
}
