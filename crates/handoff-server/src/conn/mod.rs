//! The HTTP accept loop: a cap on open connections, header and keep-alive deadlines per
//! connection (the body deadline is the edge's), TCP_NODELAY, and graceful shutdown with a
//! bounded grace. Everything here lives in memory for the listener's life.

mod activity;
mod refuse;

use std::{io, sync::Arc, time::Duration};

use axum::{Router, body::Body};
use handoff_config::ServerConfig;
use hyper::{Request, body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto::Builder,
};
use tokio::{net::TcpListener, net::TcpStream, sync::OwnedSemaphorePermit, sync::Semaphore};
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tower::ServiceExt;

use self::{
    activity::{Activity, InFlightBody, Timeouts, Tracked},
    refuse::{Refuser, Throttled},
};

/// How often a full house or a failing `accept` is logged at most.
const WARN_INTERVAL: Duration = Duration::from_secs(60);
/// Pause after an `accept` failure such as running out of file descriptors, which would
/// otherwise repeat at once.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What bounds the connections one listener serves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    timeouts: Timeouts,
    max_connections: usize,
    grace: Duration,
}

impl Limits {
    /// The limits `server.*` configures.
    pub(crate) fn from_config(server: &ServerConfig) -> Self {
        Self {
            timeouts: Timeouts {
                header: server.header_read_timeout,
                keep_alive: server.keep_alive_timeout,
            },
            max_connections: usize::try_from(server.max_connections).unwrap_or(usize::MAX),
            grace: server.shutdown_grace,
        }
    }
}

/// Serves `router` on `listener` until `shutdown`, then lets open requests finish for the
/// grace period and closes what is left.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let refuser = Refuser::new(limits.max_connections);
    let (mut full, mut failing) = (Throttled::new(WARN_INTERVAL), Throttled::new(WARN_INTERVAL));
    let hard_stop = CancellationToken::new();
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                accept_failed(&e, &mut failing, &shutdown).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            if let Some(refused) = full.hit() {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    refused,
                    "connection limit reached: refusing new connections with 503 (server.max_connections)"
                );
            }
            refuser.refuse(tcp);
            continue;
        };
        connections.spawn(connection(
            tcp,
            router.clone(),
            limits.timeouts,
            permit,
            (shutdown.clone(), hard_stop.clone()),
        ));
    }
    drop(listener);
    connections.close();
    if tokio::time::timeout(limits.grace, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            grace_ms = u64::try_from(limits.grace.as_millis()).unwrap_or(u64::MAX),
            "in-flight requests did not finish in time; closing them"
        );
        hard_stop.cancel();
        connections.wait().await;
    }
    Ok(())
}

async fn accept_failed(error: &io::Error, failing: &mut Throttled, shutdown: &CancellationToken) {
    // The peer gave up before we accepted: nothing to report.
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) {
        return;
    }
    if let Some(times) = failing.hit() {
        tracing::warn!(error = %error, times, "cannot accept connections");
    }
    tokio::select! {
        () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
        () = shutdown.cancelled() => {}
    }
}

/// Serves one connection until it closes, times out, or shutdown ends it.
async fn connection(
    tcp: TcpStream,
    router: Router,
    timeouts: Timeouts,
    _permit: OwnedSemaphorePermit,
    (shutdown, hard_stop): (CancellationToken, CancellationToken),
) {
    // Responses leave in more than one write (headers, body); without TCP_NODELAY, Nagle plus
    // the client's delayed ACK holds the second write ~40 ms (measured by `handoff bench`).
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
    let activity = Activity::new();
    // hyper's own 400/414/431 answers get a JSON-RPC body on their way out.
    let io = TokioIo::new(crate::edge::parse_errors::ParseErrorBodies::new(
        Tracked::new(tcp, activity.clone()),
    ));
    let service = service_fn({
        let activity = activity.clone();
        move |request: Request<Incoming>| {
            let in_flight = activity.request_started();
            let router = router.clone();
            async move {
                let response = router.oneshot(request.map(Body::new)).await?;
                Ok::<_, std::convert::Infallible>(
                    response.map(|body| InFlightBody::new(body, in_flight)),
                )
            }
        }
    });
    let mut builder = Builder::new(TokioExecutor::new());
    // hyper's own header timer restarts after every response, so it would also cut idle
    // keep-alive connections at the header timeout; `Activity` keeps both deadlines instead.
    builder.http1().header_read_timeout(None);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let expired = activity.expired(timeouts);
    tokio::pin!(expired);
    let mut draining = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            // Dropping the connection closes the socket.
            () = &mut expired => {
                tracing::debug!("connection closed: it waited past its header or keep-alive deadline");
                return;
            }
            () = shutdown.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            () = hard_stop.cancelled() => return,
        }
    }
}
