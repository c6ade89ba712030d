//! The running server as a library object: start, address, logged requests, shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::ModelError;
use crate::log::{LoggedRequest, RequestLog};
use crate::script::Script;
use crate::server::{AppState, router};
use crate::shutdown::{self, Trigger};

/// How long a graceful shutdown may wait for open connections before they are cut.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A scripted model server listening on 127.0.0.1. Dropping it also shuts the server down,
/// without waiting.
#[derive(Debug)]
pub struct ScriptedModel {
    addr: SocketAddr,
    log: Arc<RequestLog>,
    trigger: Trigger,
    task: JoinHandle<()>,
}

impl ScriptedModel {
    /// Starts serving `script` on a free port of 127.0.0.1, logging requests to `log` if given.
    pub async fn start(script: Script, log: Option<PathBuf>) -> Result<ScriptedModel, ModelError> {
        ScriptedModel::start_on(script, log, 0).await
    }

    /// Like [`ScriptedModel::start`], on a chosen port (0 = any free port).
    pub async fn start_on(
        script: Script,
        log: Option<PathBuf>,
        port: u16,
    ) -> Result<ScriptedModel, ModelError> {
        script.validate()?;
        let log = Arc::new(RequestLog::open(log.as_deref())?);
        let bind = |source| ModelError::Bind { port, source };
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(bind)?;
        let addr = listener.local_addr().map_err(bind)?;
        let (trigger, shutdown) = shutdown::channel();
        let app = router(AppState {
            script: Arc::new(script),
            log: Arc::clone(&log),
            shutdown: shutdown.clone(),
            responses: Arc::new(AtomicU64::new(0)),
        });
        let task = tokio::spawn(async move {
            // Streamed answers are many small writes: without NODELAY each answer on a reused
            // connection waited ~40 ms for the client's delayed ACK (measured), as no provider's
            // does.
            let listener = listener.tap_io(|tcp| {
                if let Err(error) = tcp.set_nodelay(true) {
                    tracing::debug!(%error, "TCP_NODELAY");
                }
            });
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.wait())
                .await;
            if let Err(error) = served {
                tracing::warn!(%error, "scripted model server stopped");
            }
        });
        tracing::debug!(%addr, "scripted model listening");
        Ok(ScriptedModel {
            addr,
            log,
            trigger,
            task,
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT` (Anthropic-style base URL, no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (OpenAI-style base URL, for OpenCode and Codex configs).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Every request so far (except `/health`), oldest first.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.log.snapshot()
    }

    /// Waits until at least `n` requests have been logged; false if `timeout` passes first.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        self.log.wait_for(n, timeout).await
    }

    /// Stops accepting, ends hanging replies, and waits (briefly) for connections to close.
    pub async fn shutdown(self) {
        self.trigger.fire();
        let mut task = self.task;
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
            .await
            .is_err()
        {
            tracing::warn!("scripted model connections did not close in time; aborting");
            task.abort();
        }
    }
}
