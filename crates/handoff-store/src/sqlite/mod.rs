//! The embedded store: one SQLite file in WAL mode, implementing every store trait.
//!
//! Write serialization: every write goes through a pool of exactly one connection, and every
//! multi-statement write runs in a `BEGIN IMMEDIATE` transaction on it. The single connection
//! makes in-process writers queue fairly (FIFO on the pool) instead of spinning on
//! `SQLITE_BUSY`; `BEGIN IMMEDIATE` takes SQLite's write lock before the first read, so the
//! read-then-write checks (idempotency, capacity, slot limits, compare-and-set, event
//! numbering) also hold against any other process that opens the file. A deferred `BEGIN`
//! would let two transactions read the same state and fail (or worse, succeed) at upgrade time.
//! Plain reads use a separate pool whose connections are `query_only`; WAL lets them run
//! alongside the writer and each sees only committed data. The small reads agents poll (a
//! task, its latest events, a page of tasks) run on the calling thread instead ([`inline`]),
//! falling back to that pool whenever SQLite cannot answer them at once.
//!
//! A failed write leaves the store usable: when SQLite ends a transaction on its own (a
//! COMMIT that fails with a full disk or an I/O error is rolled back by SQLite), sqlx still
//! counts it as open and would refuse every later `BEGIN` on that connection, so a connection
//! returned to its pool still inside a transaction is closed and the pool opens a fresh one.
//! Whether writes currently fail is kept in memory ([`SqliteStore::write_fault`]) for
//! readiness checks.

mod conn;
mod health;
mod inline;
mod small;

use std::{future::Future, path::Path, time::Duration};

use async_trait::async_trait;
use handoff_task::{EventKind, NewTask, PendingInput, Task, TaskEvent, TaskId};
use sqlx::{
    Connection, Sqlite, SqlitePool, Transaction,
    migrate::Migrator,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};
use tokio::sync::watch;

use self::{health::WriteHealth, inline::InlineReads};

use crate::{
    IdempotencyClaim, StoreError, StoreSignal, TaskFilter, TaskPage,
    backend::{Backend, Pooled, Scope, Tx},
    fence::Held,
    ops,
};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How long a statement waits for another process's lock before failing with `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Concurrent readers; WAL readers never block the writer or each other.
const READERS: u32 = 8;

/// The SQLite implementation of [`crate::Store`] and [`crate::WorkspaceStore`]; cheap to clone (the clones share both pools).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Exactly one connection: the serialization point for all writes.
    write: SqlitePool,
    /// Read-only connections for plain queries.
    read: SqlitePool,
    /// Read-only connections for the small reads answered on the calling thread.
    inline: InlineReads,
    /// Whether writes currently fail.
    health: WriteHealth,
    /// The leases this handle holds, which fence its writes.
    held: Held,
    /// Wake-ups of this handle's own command writes (no other instance shares the file).
    signals: tokio::sync::broadcast::Sender<crate::StoreSignal>,
}

/// Pool settings shared by both pools: a connection that comes back still inside a
/// transaction is closed rather than reused (see the module docs).
///
/// Each round trip to a connection is a hop to its worker thread and back, so none is made
/// that cannot find anything: a connection outside any transaction (sqlx counts it on the
/// worker, so a dropped transaction's queued ROLLBACK still counts as inside one, and a
/// cancelled `BEGIN` is rolled back by the worker before it runs the next command) goes back
/// as it is. `tested` keeps sqlx's ping before each acquire, which replaces a connection
/// whose worker died: the one writer keeps it, the readers drop it (a dead reader fails its
/// queries until the pool retires it, at most `max_lifetime` later).
fn pool_options(max_connections: u32, tested: bool) -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .max_connections(max_connections)
        .test_before_acquire(tested)
        .after_release(|conn, _| {
            Box::pin(async move {
                if !conn.is_in_transaction() {
                    return Ok(true);
                }
                // A dropped transaction queues its ROLLBACK; the ping answers after it ran.
                conn.ping().await?;
                Ok(!conn.is_in_transaction())
            })
        })
}

/// What a pool's `before_acquire` check returns: whether to hand the connection out.
type Keep<'c> = std::pin::Pin<Box<dyn Future<Output = Result<bool, sqlx::Error>> + Send + 'c>>;

/// The writer pool's check before handing out its connection: replaced after a write failed
/// in a way only a fresh connection recovers from (see [`WriteHealth::take_reopen`]), so
/// writes work again as soon as the file does, without a restart.
fn reopening(
    health: WriteHealth,
) -> impl for<'c> Fn(&'c mut sqlx::SqliteConnection, sqlx::pool::PoolConnectionMetadata) -> Keep<'c>
+ Send
+ Sync
+ 'static {
    move |_, _| {
        let keep = !health.take_reopen();
        if !keep {
            tracing::info!("task store: replacing the writer connection after a storage error");
        }
        Box::pin(std::future::ready(Ok(keep)))
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|source| StoreError::Io {
                    path: dir.display().to_string(),
                    source,
                })?;
        }
        let base = SqliteConnectOptions::new()
            .filename(path)
            .foreign_keys(true)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT);

        // WAL is a property of the file, so only the first (writer) connection needs to set it;
        // switching modes needs an exclusive lock that readers would otherwise contend for.
        let health = WriteHealth::new();
        let write = pool_options(1, true)
            .before_acquire(reopening(health.clone()))
            .connect_with(
                base.clone()
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal),
            )
            .await?;
        MIGRATOR.run(&write).await?;

        // query_only makes an accidental write through the read pool fail instead of racing
        // the writer's checks.
        let read = pool_options(READERS, false)
            .connect_with(base.pragma("query_only", "ON"))
            .await?;
        Ok(Self {
            write,
            read,
            inline: InlineReads::new(path),
            health,
            held: Held::default(),
            signals: tokio::sync::broadcast::channel(crate::store::SIGNAL_BACKLOG).0,
        })
    }

    /// Why writes fail, while they do: the latest failed write's storage error (disk full, I/O
    /// error, database locked by another process), until a write succeeds again.
    pub fn write_fault(&self) -> Option<String> {
        self.health.fault()
    }

    /// Follows [`Self::write_fault`].
    pub fn write_faults(&self) -> watch::Receiver<Option<String>> {
        self.health.subscribe()
    }

    /// Makes one small real write, so [`Self::write_fault`] clears once the storage works
    /// again even when nothing else writes.
    pub async fn probe_writes(&self) -> Result<(), StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            sqlx::query("INSERT OR REPLACE INTO store_probe (id, at) VALUES (1, ?)")
                .bind(handoff_task::unix_millis_now())
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Checks that the database file can be read: one small read on the read pool. The
    /// counterpart of [`crate::PgStore::probe_reachable`]; it records nothing (a local file
    /// needs no refusing at once: its failures are immediate).
    pub async fn probe_reachable(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT count(*) FROM store_probe")
            .fetch_one(&self.read)
            .await?;
        Ok(())
    }

    /// Runs one write, recording whether the storage took it.
    async fn writing<T>(
        &self,
        write: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        crate::backend::writing(self, write).await
    }

    /// Closes both pools, waiting for in-flight statements (a clean shutdown checkpoints WAL).
    pub async fn close(&self) {
        self.inline.close();
        self.read.close().await;
        self.write.close().await;
    }

    /// `inline` on the calling thread when it reads at most `rows` rows (see [`inline`]);
    /// else, or when SQLite cannot answer it at once, `pooled` on the read pool.
    async fn small_read<T>(
        &self,
        rows: u32,
        inline: impl FnOnce(&rusqlite::Connection) -> Result<T, inline::Miss>,
        pooled: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        if rows <= inline::MAX_ROWS
            && let Some(answer) = self.inline.read(inline)
        {
            return answer;
        }
        pooled.await
    }

    /// A transaction holding SQLite's write lock from its first statement.
    async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        Ok(self.write.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// Another instance's handle on the same database (for tests of fencing): it shares the
    /// connections but holds its own leases.
    #[cfg(any(test, feature = "conformance"))]
    pub fn another_instance(&self) -> Self {
        Self {
            held: Held::default(),
            ..self.clone()
        }
    }
}

#[async_trait]
impl Backend for SqliteStore {
    type Db = Sqlite;
    // The file admits one instance.
    const SHARED: bool = false;

    fn held(&self) -> &Held {
        &self.held
    }

    fn before_write(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn after_write<T>(&self, result: &Result<T, StoreError>) {
        self.health.note(result);
    }

    async fn begin(&self, _scope: Scope<'_>) -> Result<Tx<Self>, StoreError> {
        // Every write is serialized by the one writer connection and SQLite's write lock.
        self.begin_write().await
    }

    async fn begin_insert(
        &self,
        _task: &NewTask,
        _idempotency: Option<&IdempotencyClaim>,
        _max_queued: u32,
    ) -> Result<(Tx<Self>, Option<i64>), StoreError> {
        Ok((self.begin_write().await?, None))
    }

    async fn snapshot(&self) -> Result<Tx<Self>, StoreError> {
        Ok(self.read.begin().await?)
    }

    async fn writer(&self) -> Result<Pooled<Self>, StoreError> {
        Ok(self.write.acquire().await?)
    }

    async fn reader(&self) -> Result<Pooled<Self>, StoreError> {
        Ok(self.read.acquire().await?)
    }

    async fn notify(_tx: &mut Tx<Self>, _signal: &StoreSignal) -> Result<(), StoreError> {
        // No other instance shares the file: the wake-ups are this handle's own.
        Ok(())
    }

    fn notified(&self, signal: StoreSignal) {
        let _ = self.signals.send(signal);
    }

    async fn send_broadcast(&self, _body: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn subscribe(&self) -> Result<tokio::sync::broadcast::Receiver<StoreSignal>, StoreError> {
        Ok(self.signals.subscribe())
    }

    async fn take_rescuer(
        &self,
        _holder: &str,
        _now: i64,
        _until: i64,
    ) -> Result<bool, StoreError> {
        // One process per file: the duty is always this one's.
        Ok(true)
    }

    async fn read_task(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.small_read(1, |conn| small::get_inline(conn, id), async {
            ops::tasks::get(&mut *self.reader().await?, id).await
        })
        .await
    }

    async fn read_list(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
        // A text filter may walk every task to fill its page: not a small read.
        if filter.text.is_some() {
            return ops::task_list::list(&mut *self.reader().await?, filter).await;
        }
        // A page is read one row longer than asked (see `ops::task_list`).
        self.small_read(
            filter.limit.saturating_add(1),
            |conn| small::list_inline(conn, filter),
            async { ops::task_list::list(&mut *self.reader().await?, filter).await },
        )
        .await
    }

    async fn read_recent(&self, id: &TaskId, n: u32) -> Result<Vec<TaskEvent>, StoreError> {
        self.small_read(n, |conn| small::recent_inline(conn, id, n), async {
            ops::events::recent(&mut *self.reader().await?, id, n).await
        })
        .await
    }

    async fn read_last_of_kind(
        &self,
        id: &TaskId,
        kind: EventKind,
    ) -> Result<Option<TaskEvent>, StoreError> {
        self.small_read(
            1,
            |conn| small::last_of_kind_inline(conn, id, kind),
            async { ops::events::last_of_kind(&mut *self.reader().await?, id, kind).await },
        )
        .await
    }

    async fn read_inputs(&self, task: &TaskId) -> Result<Vec<PendingInput>, StoreError> {
        // Nothing bounds how many requests a task has open, so the inline read itself gives up
        // past MAX_ROWS.
        self.small_read(
            inline::MAX_ROWS,
            |conn| small::of_task_inline(conn, task),
            async { ops::inputs::of_task(&mut *self.reader().await?, task).await },
        )
        .await
    }
}

#[cfg(test)]
mod inline_tests;
#[cfg(test)]
mod reopen_tests;
#[cfg(test)]
mod tests;
