//! An instance cut off from PostgreSQL (issue 21): its connections to the database run
//! through a proxy the test controls. The proxy cuts at the worst moment — while one of the
//! instance's sessions holds the database-wide write lock inside a transaction — and then holds
//! every byte. The server ends that stuck session after the idle-in-transaction limit, the
//! instance's leases expire, and another instance declares it lost and fails its task; when
//! the proxy lets the bytes through again, the cut-off instance's late writes about the task
//! are refused by the fencing token — nothing of its run lands after the takeover — and it
//! kills the run (frozen since its lease lapsed) and registers again as a new instance.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::watch,
};

use super::{
    harness::start,
    mcp::{call, task_id},
    postgres::{SCRIPT_EXECUTOR, fresh_database},
    scale::{processes_with_env, psql, wait_count},
    wait::{PATIENCE, Pace, poll, wait_until},
};

const HEARTBEAT_MS: &str = "200";
const LEASE_EXPIRY_MS: &str = "1000";

/// A TCP proxy to `upstream` that forwards while open and holds every byte while cut (a
/// partition: nothing is refused, nothing arrives).
struct Proxy {
    port: u16,
    gate: Arc<Gate>,
}

/// What the proxy's pumps share.
struct Gate {
    open: watch::Sender<bool>,
    /// Set: cut right after the next transaction's first statement is forwarded.
    armed: AtomicBool,
    /// The local port of the upstream connection the armed cut happened on.
    trapped: Mutex<Option<u16>>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let gate = Arc::new(Gate {
            open: watch::channel(true).0,
            armed: AtomicBool::new(false),
            trapped: Mutex::new(None),
        });
        let shared = gate.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let gate = shared.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let local = server.local_addr().map_or(0, |a| a.port());
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::spawn(pump(cr, sw, gate.clone(), Some(local)));
                    tokio::spawn(pump(sr, cw, gate, None));
                });
            }
        });
        Proxy { port, gate }
    }

    fn set_open(&self, open: bool) {
        self.gate.open.send_replace(open);
    }

    /// Cuts right after a transaction's first statement (following `BEGIN`) is forwarded,
    /// and returns the local port of the upstream session left inside that transaction.
    async fn cut_inside_next_transaction(&self) -> u16 {
        *self.gate.trapped.lock().unwrap() = None;
        self.gate.armed.store(true, Ordering::SeqCst);
        let mut open = self.gate.open.subscribe();
        open.wait_for(|open| !*open).await.unwrap();
        self.gate.trapped.lock().unwrap().expect("an armed cut")
    }
}

/// Copies `from` to `to`, waiting while the gate is shut (before reading and before writing).
/// On the client-to-server side (`upstream_port` set), an armed gate shuts itself after the
/// chunk that follows a `BEGIN`.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    gate: Arc<Gate>,
    upstream_port: Option<u16>,
) {
    let mut open = gate.open.subscribe();
    let mut buf = vec![0u8; 16 * 1024];
    let mut began = false;
    loop {
        if open.wait_for(|open| *open).await.is_err() {
            return;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if open.wait_for(|open| *open).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
        let Some(port) = upstream_port else { continue };
        if began && gate.armed.swap(false, Ordering::SeqCst) {
            *gate.trapped.lock().unwrap() = Some(port);
            gate.open.send_replace(false);
        }
        // sqlx sends `BEGIN` alone as a simple query and waits for its answer.
        began = buf[..n].windows(6).any(|w| w == b"BEGIN\0");
    }
}

/// Cuts the instance behind `proxy` off while one of its sessions holds the database-wide
/// write lock inside a transaction: a read-only transaction caught instead is let go and the
/// cut tried again.
fn cut_holding_the_write_lock(runtime: &tokio::runtime::Runtime, proxy: &Proxy, url: &str) {
    for _ in 0..100 {
        let port = runtime.block_on(proxy.cut_inside_next_transaction());
        let holds = format!(
            "SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND a.client_port = {port}"
        );
        // The forwarded statement may still be on its way to the server: looked for briefly,
        // as a session that got no lock never gets one behind a closed gate.
        let caught = poll(
            Duration::from_millis(500),
            Pace::every(Duration::from_millis(20)),
            || psql(url, &holds) == "1",
        );
        if caught.is_ok() {
            return;
        }
        proxy.set_open(true);
    }
    panic!("no cut caught the instance holding the write lock");
}

/// `host:port` of a `postgres://user@host:port/db` URL, and the URL through `proxy_port`.
fn through_proxy(url: &str, proxy_port: u16) -> (String, String) {
    let rest = url.split_once('@').map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap().to_owned();
    let proxied = url.replacen(&authority, &format!("127.0.0.1:{proxy_port}"), 1);
    (authority, proxied)
}

#[test]
fn a_cut_off_instance_loses_its_task_and_its_late_writes_are_refused() {
    let url = fresh_database();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (upstream, _) = through_proxy(&url, 0);
    let proxy = runtime.block_on(Proxy::start(upstream));
    let (_, proxied) = through_proxy(&url, proxy.port);

    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.extend([
        ("HANDOFF_HEARTBEAT_MS", HEARTBEAT_MS),
        ("HANDOFF_LEASE_EXPIRY_MS", LEASE_EXPIRY_MS),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
    ]);
    let mut cut_env = env.clone();
    cut_env.push(("HANDOFF_DATABASE_URL", proxied.as_str()));
    // The cut-off instance starts alone, so the task is its own.
    let cut = start(&cut_env);
    let task = task_id(&call(
        &cut,
        "agent-a",
        "execute_task",
        json!({"task_description": "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.1; done"}),
    ));
    let lines =
        format!("SELECT COUNT(*) FROM task_events WHERE task_id = '{task}' AND kind = 'output'");
    wait_count_at_least(&url, &lines, 3);
    let cut_id = psql(
        &url,
        &format!("SELECT owner FROM tasks WHERE id = '{task}'"),
    );
    env.push(("HANDOFF_DATABASE_URL", url.as_str()));
    let other = start(&env);

    cut_holding_the_write_lock(&runtime, &proxy, &url);
    let lost = format!("interrupted: instance {cut_id} lost");
    wait_count(
        &url,
        &format!(
            "SELECT COUNT(*) FROM tasks WHERE id = '{task}' AND status = 'failed' AND error = '{lost}'"
        ),
        1,
        Duration::from_secs(15),
    );
    let failed_at: i64 = psql(
        &url,
        &format!(
            "SELECT seq FROM task_events WHERE task_id = '{task}' AND kind = 'status' \
             AND data::json->>'to' = 'failed'"
        ),
    )
    .parse()
    .unwrap();
    // The cut-off instance ran its task on until its lease lapsed, writing into a void: its
    // writes failed, or its probe found the store gone first and refused them unattempted.
    cut.wait_log(
        "the cut-off instance's writes failing",
        &["task store writes fail", "task store unreachable"],
    );

    proxy.set_open(true);
    // Back: its heartbeat finds it declared lost; it kills the run and registers again as a
    // new instance (its old leases stay expired).
    wait_count(
        &url,
        &format!(
            "SELECT COUNT(*) FROM instances WHERE pid = {} AND id <> '{cut_id}'",
            cut.child.id()
        ),
        1,
        Duration::from_secs(15),
    );
    let entry = format!("HANDOFF_TASK_ID={task}");
    wait_until(
        "the cut-off run to be killed on its instance's return",
        PATIENCE,
        || processes_with_env(&entry).is_empty(),
    );
    // Nothing of the old run landed after the takeover, and the task stayed as decided.
    let late = psql(
        &url,
        &format!(
            "SELECT string_agg(kind || ': ' || message, ' | ' ORDER BY seq) FROM task_events \
             WHERE task_id = '{task}' AND seq > {failed_at}"
        ),
    );
    assert_eq!(late, "", "events written after the takeover");
    let status = psql(
        &url,
        &format!("SELECT status || ' ' || error FROM tasks WHERE id = '{task}'"),
    );
    assert_eq!(status, format!("failed {lost}"));
    drop((cut, other));
}

/// Waits until `sql` counts at least `want`.
fn wait_count_at_least(url: &str, sql: &str, want: i64) {
    wait_until(&format!("`{sql}` to reach {want}"), PATIENCE, || {
        let n: i64 = psql(url, sql).parse().unwrap();
        if n >= want { Ok(()) } else { Err(n) }
    });
}
