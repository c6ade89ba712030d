//! Binding, routing and shutdown.

use std::{net::SocketAddr, sync::Arc};

use axum::{Router, middleware, routing::get, serve::ListenerExt};
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
    http::{count_requests, health, metrics, ready},
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

/// The axum router: `/mcp` behind the edge guard, plus `/health` and `/ready`.
pub fn router(app: &App, shutdown: &CancellationToken) -> Result<Router, ServeError> {
    let server = &app.config.server;
    let policy = Arc::new(EdgePolicy::from_config(server)?);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(server.session_idle_timeout);
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
    let service =
        StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(sessions), mcp_config);

    let mcp = Router::new()
        .fallback_service(service)
        .layer(middleware::from_fn(edge::jsonrpc::jsonrpc_errors))
        .layer(middleware::from_fn_with_state(policy, edge::guard))
        .layer(middleware::from_fn_with_state(
            app.mcp_metrics.clone(),
            count_requests,
        ));
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
    Ok(mcp.merge(plain).merge(metrics))
}

/// A running HTTP server.
#[derive(Debug)]
pub struct ServerHandle {
    /// The address actually bound (port 0 resolved).
    pub local_addr: SocketAddr,
    /// Finishes when the server has shut down.
    pub task: JoinHandle<Result<(), std::io::Error>>,
}

/// Binds and serves HTTP until `shutdown` is cancelled, then drains for the configured grace.
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
    app.status
        .set_component("http", true, format!("MCP at http://{local_addr}/mcp"));
    let grace = app.config.server.shutdown_grace;
    let task = tokio::spawn(async move {
        let stopped = shutdown.clone();
        // Responses leave in more than one write (headers, body); without TCP_NODELAY, Nagle
        // plus the client's delayed ACK holds the second write ~40 ms (measured by `handoff bench`).
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "could not set TCP_NODELAY");
            }
        });
        let serve = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stopped.cancelled().await })
            .into_future();
        tokio::pin!(serve);
        tokio::select! {
            result = &mut serve => result,
            () = async { shutdown.cancelled().await; tokio::time::sleep(grace).await } => {
                tracing::warn!(grace_ms = grace.as_millis() as u64, "in-flight requests did not finish in time; closing them");
                Ok(())
            }
        }
    });
    Ok(ServerHandle { local_addr, task })
}

/// Serves MCP over stdin/stdout until the client closes the stream or `shutdown` fires.
pub async fn serve_stdio(
    app: &App,
    agent: Option<AgentId>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    app.status.set_component("stdio", true, "MCP over stdio");
    let handler = app.mcp_handler(agent, &shutdown);
    let running = handler
        .serve_with_ct(rmcp::transport::stdio(), shutdown)
        .await
        .map_err(|e| ServeError::Stdio(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Stdio(e.to_string()))?;
    Ok(())
}
