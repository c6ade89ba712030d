//! The PostgreSQL store: the same tables and rules as [`crate::SqliteStore`], for several Handoff
//! instances sharing one database.
//!
//! Write serialization: every multi-statement write runs in a transaction that first takes the
//! transaction-scoped advisory locks of what its read-then-write checks read — the task, the
//! idempotency or repeat-guard key, the claims, the backlog near its cap ([`locks`]) — never a
//! database-wide one, so writes about different tasks and keys go on side by side while each
//! check holds across every process using the database (under READ COMMITTED each statement
//! after the lock sees every write committed before it). Claims also select their row
//! `FOR UPDATE SKIP LOCKED`. Single-statement writes need no lock.
//! The operations and their SQL are the SQLite store's ([`crate::ops`], written with `?`, which
//! [`numbered`] turns into `$1`, `$2`, ...); what is PostgreSQL's own is here: the locks, the
//! claim's and the fence check's row locks ([`conn`]), LISTEN/NOTIFY and the reachability probe.

mod conn;
mod locks;
mod peers;
mod reach;

use std::{future::Future, sync::Arc, time::Duration};

use async_trait::async_trait;
use handoff_task::{NewTask, TaskStatus};
use sqlx::{
    PgPool, Postgres, Transaction,
    migrate::Migrator,
    postgres::{PgConnectOptions, PgPoolOptions},
};
use tokio::sync::watch;

use crate::{
    IdempotencyClaim, StoreError, StoreSignal,
    backend::{Backend, Pooled, Scope, Tx},
    fence::Held,
    ops,
    sql::Sql,
};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations-postgres");

/// Connections per process.
const CONNECTIONS: u32 = 10;

/// How long [`PgStore::connect`] waits for a server that does not accept connections yet (one
/// starting beside Handoff).
const STARTUP_WAIT: Duration = Duration::from_secs(30);

/// `sql` with each `?` outside string literals replaced by PostgreSQL's `$1`, `$2`, ...
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let (mut n, mut quoted) = (0, false);
    for c in sql.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

/// Waits up to [`STARTUP_WAIT`] for `pool`'s server to accept a connection; any other failure
/// (a refused login, a bad certificate) ends the wait at once.
async fn wait_for_server(pool: &PgPool) -> Result<(), StoreError> {
    let deadline = tokio::time::Instant::now() + STARTUP_WAIT;
    loop {
        match pool.acquire().await {
            Ok(_) => return Ok(()),
            Err(sqlx::Error::PoolTimedOut) if tokio::time::Instant::now() < deadline => {
                tracing::info!("waiting for PostgreSQL to accept connections");
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// What the database server enforces on this instance's sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// How long a session may wait on this instance inside a transaction before the server
    /// ends it, releasing its locks. Every write holds one database-wide lock, so an instance
    /// cut off mid-transaction would otherwise stop every instance's writes (the rescuer's
    /// takeover included) until TCP gives up on it, hours later.
    pub idle_in_transaction: Duration,
}

/// The PostgreSQL implementation of every store trait; cheap to clone (clones share the pool).
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    /// The latest failed write's error while writes fail, for readiness checks.
    fault: Arc<watch::Sender<Option<String>>>,
    /// The leases this handle holds, which fence its writes.
    held: Held,
    /// The other instances' wake-ups, once [`crate::PeerStore::signals`] started listening.
    listener: peers::Listener,
    /// Whether the latest liveness probe reached the server.
    reach: Arc<reach::Reach>,
    /// The server's `max_connections`: the most submissions that can be in flight at once.
    sessions: i64,
}

impl PgStore {
    /// How long an operation waits for a connection — an idle one, or a new one being opened —
    /// before it fails with [`sqlx::Error::PoolTimedOut`] ([`StoreError::is_unreachable`]): while
    /// PostgreSQL is down or cut off, a caller learns so within this rather than after sqlx's 30 s
    /// default. Opening a connection has no limit of its own; this one bounds it. A healthy pool
    /// hands out a connection within milliseconds, so only a server that cannot be reached (or a
    /// pool saturated far beyond its statements' length) reaches it.
    pub const ACQUIRE_TIMEOUT: Duration = Duration::from_millis(1500);

    /// Connects to `url` (`postgres://...`) with `limits` on every session, and brings the
    /// schema up to date.
    pub async fn connect(url: &str, limits: SessionLimits) -> Result<Self, StoreError> {
        let idle_ms = limits.idle_in_transaction.as_millis().max(1);
        let options = url.parse::<PgConnectOptions>()?.options([(
            "idle_in_transaction_session_timeout",
            format!("{idle_ms}ms"),
        )]);
        let pool = PgPoolOptions::new()
            .max_connections(CONNECTIONS)
            .acquire_timeout(Self::ACQUIRE_TIMEOUT)
            .connect_lazy_with(options);
        wait_for_server(&pool).await?;
        MIGRATOR.run(&pool).await?;
        let sessions: i64 = sqlx::query_scalar("SELECT current_setting('max_connections')::bigint")
            .fetch_one(&pool)
            .await?;
        Ok(Self {
            pool,
            fault: Arc::new(watch::channel(None).0),
            held: Held::default(),
            listener: peers::Listener::default(),
            reach: Arc::default(),
            sessions,
        })
    }

    /// The pool, unless the latest liveness probe found the server unreachable (see
    /// [`Self::probe_reachable`]): then the probe's cause, at once.
    fn up(&self) -> Result<&PgPool, StoreError> {
        self.reach.check()?;
        Ok(&self.pool)
    }

    /// Why writes fail, while they do: the latest failed write's database error.
    pub fn write_fault(&self) -> Option<String> {
        self.fault.borrow().clone()
    }

    /// Follows [`Self::write_fault`].
    pub fn write_faults(&self) -> watch::Receiver<Option<String>> {
        self.fault.subscribe()
    }

    /// Makes one small real write, so [`Self::write_fault`] clears once writes work again.
    pub async fn probe_writes(&self) -> Result<(), StoreError> {
        self.writing(async {
            Sql::new(
                "INSERT INTO store_probe (id, at) VALUES (1, ?) \
                 ON CONFLICT (id) DO UPDATE SET at = excluded.at",
            )
            .bind(handoff_task::unix_millis_now())
            .execute(&mut *self.writer().await?)
            .await?;
            Ok(())
        })
        .await
    }

    /// Closes the pool, waiting for in-flight statements.
    pub async fn close(&self) {
        self.listener.stop();
        self.pool.close().await;
    }

    /// Runs one write, recording whether the database took it (see [`Backend::after_write`]).
    async fn writing<T>(
        &self,
        write: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        crate::backend::writing(self, write).await
    }

    /// A submission's transaction: the locks of the keys it checks, and the backlog admission
    /// lock — shared while the queue is far enough below `max_queued` that every session of
    /// the server submitting at once could not pass it, else exclusive ([`locks`]).
    async fn begin_submission(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<(Transaction<'static, Postgres>, Option<i64>), StoreError> {
        let mut exclusive = false;
        loop {
            let mut tx = self.pool.begin().await?;
            let agent = task.agent_id.as_str();
            let idempotency = idempotency.map(|c| locks::agent_key(agent, &c.key));
            let repeat = task
                .repeat_guard
                .as_ref()
                .map(|g| locks::agent_key(agent, &g.key));
            locks::submission(
                &mut tx,
                idempotency.as_deref(),
                repeat.as_deref(),
                exclusive,
            )
            .await?;
            let queued = ops::tasks::count_in(&mut *tx, &[TaskStatus::Queued]).await?;
            let near = queued.saturating_add(self.sessions) >= i64::from(max_queued);
            if exclusive || !near {
                // Counted under the locks: the insert's own check reuses it.
                return Ok((tx, Some(queued)));
            }
            // Near the cap: counted again under the exclusive lock.
            tx.rollback().await?;
            exclusive = true;
        }
    }

    /// Another instance's handle on the same database (for tests of fencing): it shares the
    /// connections but holds its own leases.
    #[cfg(any(test, feature = "conformance"))]
    pub fn another_instance(&self) -> Self {
        Self {
            held: Held::default(),
            // Its own LISTEN connection, as another process would have.
            listener: peers::Listener::default(),
            ..self.clone()
        }
    }
}

#[async_trait]
impl Backend for PgStore {
    type Db = Postgres;
    const SHARED: bool = true;

    fn held(&self) -> &Held {
        &self.held
    }

    fn before_write(&self) -> Result<(), StoreError> {
        // Refused unattempted: the probe, not this write, tells whether writes work.
        self.up().map(|_| ())
    }

    /// A connection or I/O failure marks writes as failing, a success clears it, a refused
    /// request changes nothing.
    fn after_write<T>(&self, result: &Result<T, StoreError>) {
        match result {
            Ok(_) => {
                if self.fault.send_if_modified(|f| f.take().is_some()) {
                    tracing::info!("task store writes succeed again");
                }
            }
            Err(e @ StoreError::Database(_)) if e.is_unreachable() => {
                let text = e.to_string();
                if self.fault.send_if_modified(|f| {
                    let first = f.is_none();
                    *f = Some(text.clone());
                    first
                }) {
                    tracing::warn!(error = %text, "task store writes fail");
                }
            }
            Err(_) => {}
        }
    }

    async fn begin(&self, scope: Scope<'_>) -> Result<Tx<Self>, StoreError> {
        // A transaction holding `scope`'s lock from its first statement (none for `Plain`).
        let mut tx = self.pool.begin().await?;
        locks::lock(&mut tx, scope).await?;
        Ok(tx)
    }

    async fn begin_insert(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<(Tx<Self>, Option<i64>), StoreError> {
        self.begin_submission(task, idempotency, max_queued).await
    }

    async fn snapshot(&self) -> Result<Tx<Self>, StoreError> {
        Ok(self.up()?.begin().await?)
    }

    async fn writer(&self) -> Result<Pooled<Self>, StoreError> {
        Ok(self.pool.acquire().await?)
    }

    async fn reader(&self) -> Result<Pooled<Self>, StoreError> {
        Ok(self.up()?.acquire().await?)
    }

    async fn notify(tx: &mut Tx<Self>, signal: &StoreSignal) -> Result<(), StoreError> {
        peers::notify(tx, signal).await
    }

    fn notified(&self, _signal: StoreSignal) {
        // This handle hears its own NOTIFY through its listener, like every other instance.
    }

    async fn send_broadcast(&self, body: &str) -> Result<(), StoreError> {
        peers::broadcast(self, body).await
    }

    async fn subscribe(&self) -> Result<tokio::sync::broadcast::Receiver<StoreSignal>, StoreError> {
        self.listener.start(&self.pool).await?;
        Ok(self.listener.subscribe())
    }

    async fn take_rescuer(&self, holder: &str, now: i64, until: i64) -> Result<bool, StoreError> {
        self.writing(async {
            ops::instances::rescuer_lock(&mut *self.writer().await?, holder, now, until).await
        })
        .await
    }
}

#[cfg(test)]
mod reach_tests;
#[cfg(test)]
pub(crate) mod tests;
