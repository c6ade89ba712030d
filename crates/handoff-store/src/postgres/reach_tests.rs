//! PostgreSQL out of reach (issue 39): calls fail within the pool's acquire timeout instead of
//! sqlx's 30 s, a failed liveness probe makes them fail at once, and both end by themselves
//! once the server answers again. The store reaches the test server through a proxy the test
//! controls: cut, it drops every open connection and accepts new ones without ever answering.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use sqlx::{ConnectOptions, postgres::PgConnectOptions};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::watch,
};

use super::{
    PgStore,
    tests::{LIMITS, fresh_database},
};
use crate::{
    StoreError, TaskStore,
    conformance::support::{ROOMY, insert, new_task},
};

/// What a caller may wait at most while the server is unreachable.
const PROMPT: Duration = Duration::from_millis(2500);

/// A TCP proxy to a PostgreSQL server that can be cut.
struct Proxy {
    port: u16,
    open: watch::Sender<bool>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = watch::channel(true).0;
        let gate = open.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(forward(client, upstream.clone(), gate.subscribe()));
            }
        });
        Proxy { port, open }
    }

    /// Cut: open connections are dropped, new ones are held unanswered.
    fn cut(&self) {
        self.open.send_replace(false);
    }

    fn restore(&self) {
        self.open.send_replace(true);
    }
}

/// Forwards `client` to `upstream` while the gate is open; accepted while cut, it is held
/// without an answer (dropped once the gate opens: the client gave up long before).
async fn forward(mut client: TcpStream, upstream: String, mut gate: watch::Receiver<bool>) {
    if !*gate.borrow_and_update() {
        let _ = gate.wait_for(|open| *open).await;
        return;
    }
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = gate.wait_for(|open| !*open) => {}
    }
}

/// A store on a fresh database, reached through a proxy.
async fn proxied_store() -> (PgStore, Proxy) {
    let url = fresh_database().await;
    let options: PgConnectOptions = url.parse().unwrap();
    let upstream = format!("{}:{}", options.get_host(), options.get_port());
    let proxy = Proxy::start(upstream).await;
    let proxied = options.host("127.0.0.1").port(proxy.port).to_url_lossy();
    let store = PgStore::connect(proxied.as_str(), LIMITS).await.unwrap();
    (store, proxy)
}

/// Runs `call`, asserting it fails as unreachable within `limit`; the time it took.
async fn fails_unreachable<T: std::fmt::Debug>(
    limit: Duration,
    call: impl Future<Output = Result<T, StoreError>>,
) -> (StoreError, Duration) {
    let started = Instant::now();
    let err = call.await.unwrap_err();
    let took = started.elapsed();
    assert!(err.is_unreachable(), "{err}");
    assert!(took < limit, "took {took:?}: {err}");
    (err, took)
}

#[tokio::test]
async fn calls_fail_as_unreachable_within_the_acquire_timeout() {
    let (store, proxy) = proxied_store().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;

    proxy.cut();
    let (read, took) = fails_unreachable(PROMPT, store.get_task(&task.id)).await;
    eprintln!("read failed after {took:?}: {read}");
    let (write, took) = fails_unreachable(
        PROMPT,
        store.insert_task(&new_task("agent-a", 0), None, ROOMY),
    )
    .await;
    eprintln!("write failed after {took:?}: {write}");
    assert!(store.write_fault().is_some());

    // Nothing to reopen: the pool connects again by itself.
    proxy.restore();
    store.get_task(&task.id).await.unwrap().unwrap();
    insert(&store, &new_task("agent-a", 0)).await;
    assert_eq!(store.write_fault(), None);
}

#[tokio::test]
async fn a_failed_probe_refuses_calls_at_once_until_a_probe_succeeds() {
    let (store, proxy) = proxied_store().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    store.probe_reachable().await.unwrap();

    proxy.cut();
    let probe_limit = PgStore::PROBE_TIMEOUT + Duration::from_millis(500);
    let (probed, took) = fails_unreachable(probe_limit, store.probe_reachable()).await;
    eprintln!("probe failed after {took:?}: {probed}");
    // Refused without waiting for a connection, reads and writes alike, clones too.
    let at_once = Duration::from_millis(200);
    let (read, _) = fails_unreachable(at_once, store.get_task(&task.id)).await;
    assert!(matches!(read, StoreError::Unreachable(_)), "{read}");
    let clone = store.clone();
    let (write, _) = fails_unreachable(
        at_once,
        clone.insert_task(&new_task("agent-a", 0), None, ROOMY),
    )
    .await;
    assert!(matches!(write, StoreError::Unreachable(_)), "{write}");

    proxy.restore();
    store.probe_reachable().await.unwrap();
    store.get_task(&task.id).await.unwrap().unwrap();
    insert(&store, &new_task("agent-a", 0)).await;
}
