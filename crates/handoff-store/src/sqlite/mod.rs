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

mod approvals;
mod channels;
mod events;
mod health;
mod inline;
mod inputs;
mod limit;
mod peers;
mod task_list;
mod tasks;
mod workspaces;

use std::{future::Future, path::Path, time::Duration};

use async_trait::async_trait;
use handoff_task::{
    AgentId, Approval, Artifact, AuditRecord, EventKind, NewEvent, NewTask, PendingInput, Task,
    TaskEvent, TaskId, TaskStatus, WorkspaceRecord,
};
use serde_json::Value;
use sqlx::{
    Connection, Sqlite, SqlitePool, Transaction,
    migrate::Migrator,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};
use tokio::sync::watch;

use self::{health::WriteHealth, inline::InlineReads};

use crate::{
    ApprovalStore, AuditFilter, ClaimLimits, IdempotencyClaim, InsertOutcome, InstanceRecord,
    InstanceStore, InstanceSummary, LeaseGrant, NewArtifact, StatusChange, StoreError, TaskFilter,
    TaskPage, TaskStore, WorkspaceStore,
    fence::{FENCE_OF, Held},
    instances, repeats,
    rows::StoredRow,
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
        let result = write.await;
        self.health.note(&result);
        result
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

    /// Refuses a write about a task this handle holds once its row names another owner or
    /// fencing token (see [`crate::fence`]).
    async fn check_fence(
        &self,
        conn: &mut sqlx::SqliteConnection,
        id: &TaskId,
    ) -> Result<(), StoreError> {
        if !self.held.holds(id) {
            return Ok(());
        }
        let row = sqlx::query(FENCE_OF)
            .bind(id.as_str())
            .fetch_optional(&mut *conn)
            .await?;
        let stored = match row {
            Some(row) => Some((row.text_opt("tasks", "owner")?, row.int("tasks", "fence")?)),
            None => None,
        };
        self.held.verify(id, stored)
    }

    /// A checked write transaction about `id` when this handle holds its lease, else `None`
    /// (the write goes on unfenced, as before leases).
    async fn fenced(
        &self,
        id: &TaskId,
    ) -> Result<Option<Transaction<'static, Sqlite>>, StoreError> {
        if !self.held.holds(id) {
            return Ok(None);
        }
        let mut tx = self.begin_write().await?;
        self.check_fence(&mut tx, id).await?;
        Ok(Some(tx))
    }

    /// Runs `sql` (`UPDATE tasks SET <column> = ? WHERE id = ?`) with `value`; fenced when this
    /// handle holds the task's lease.
    async fn update_task(
        &self,
        id: &TaskId,
        sql: &'static str,
        value: Option<String>,
    ) -> Result<(), StoreError> {
        self.writing(async {
            let update = sqlx::query(sql).bind(value).bind(id.as_str());
            match self.fenced(id).await? {
                Some(mut tx) => {
                    update.execute(&mut *tx).await?;
                    tx.commit().await?;
                }
                None => {
                    update.execute(&self.write).await?;
                }
            }
            Ok(())
        })
        .await
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
impl TaskStore for SqliteStore {
    async fn insert_task(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<InsertOutcome, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            let outcome = tasks::insert(&mut tx, task, idempotency, max_queued).await?;
            tx.commit().await?;
            Ok(outcome)
        })
        .await
    }

    async fn find_repeated(&self, task: &NewTask) -> Result<Option<Vec<TaskId>>, StoreError> {
        let mut conn = self.read.acquire().await?;
        tasks::find_repeated(&mut conn, task).await
    }

    async fn get_task(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.small_read(
            1,
            |conn| tasks::get_inline(conn, id),
            tasks::get(&self.read, id),
        )
        .await
    }

    async fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
        // A page is read one row longer than asked (see `task_list`).
        self.small_read(
            filter.limit.saturating_add(1),
            |conn| task_list::list_inline(conn, filter),
            task_list::list(&self.read, filter),
        )
        .await
    }

    async fn claim(
        &self,
        limits: ClaimLimits,
        at: i64,
        lease: Option<&LeaseGrant>,
    ) -> Result<Option<Task>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            let claimed = tasks::claim(&mut tx, limits, at, lease).await?;
            tx.commit().await?;
            if let Some(task) = &claimed {
                self.held.hold(task);
            }
            Ok(claimed)
        })
        .await
    }

    async fn set_status(
        &self,
        id: &TaskId,
        change: &StatusChange,
    ) -> Result<Option<Task>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            self.check_fence(&mut tx, id).await?;
            let updated = tasks::set_status(&mut tx, id, change).await?;
            tx.commit().await?;
            if updated.as_ref().is_some_and(|t| t.status.is_terminal()) {
                self.held.release(id);
            }
            Ok(updated)
        })
        .await
    }

    async fn find_idempotent(
        &self,
        agent: &AgentId,
        claim: &IdempotencyClaim,
    ) -> Result<Option<Task>, StoreError> {
        let mut conn = self.read.acquire().await?;
        tasks::find_idempotent(&mut conn, agent, claim).await
    }

    async fn requeue(
        &self,
        id: &TaskId,
        from: TaskStatus,
        at: i64,
        reason: &str,
    ) -> Result<Option<Task>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            self.check_fence(&mut tx, id).await?;
            let updated = tasks::requeue(&mut tx, id, from, at, reason).await?;
            tx.commit().await?;
            if updated.is_some() {
                self.held.release(id);
            }
            Ok(updated)
        })
        .await
    }

    async fn set_runner_state(&self, id: &TaskId, state: Option<&Value>) -> Result<(), StoreError> {
        self.update_task(
            id,
            crate::rows::SET_RUNNER_STATE,
            state.map(Value::to_string),
        )
        .await
    }

    async fn set_workdir(&self, id: &TaskId, workdir: &str) -> Result<(), StoreError> {
        self.update_task(id, crate::rows::SET_WORKDIR, Some(workdir.to_owned()))
            .await
    }

    async fn mark_result_delivered(&self, id: &TaskId, at: i64) -> Result<(), StoreError> {
        self.writing(async {
            sqlx::query(
                "UPDATE tasks SET result_delivered_at = COALESCE(result_delivered_at, ?) \
                 WHERE id = ?",
            )
            .bind(at)
            .bind(id.as_str())
            .execute(&self.write)
            .await?;
            Ok(())
        })
        .await
    }

    async fn append_events(
        &self,
        id: &TaskId,
        at: i64,
        events: &[NewEvent],
    ) -> Result<Vec<i64>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            self.check_fence(&mut tx, id).await?;
            let seqs = events::append(&mut tx, id, at, events).await?;
            tx.commit().await?;
            Ok(seqs)
        })
        .await
    }

    async fn events(
        &self,
        id: &TaskId,
        offset: u64,
        limit: u32,
    ) -> Result<(Vec<TaskEvent>, u64), StoreError> {
        events::page(&self.read, id, offset, limit).await
    }

    async fn recent_events(&self, id: &TaskId, n: u32) -> Result<Vec<TaskEvent>, StoreError> {
        self.small_read(
            n,
            |conn| events::recent_inline(conn, id, n),
            events::recent(&self.read, id, n),
        )
        .await
    }

    async fn last_event_of_kind(
        &self,
        id: &TaskId,
        kind: EventKind,
    ) -> Result<Option<TaskEvent>, StoreError> {
        self.small_read(
            1,
            |conn| events::last_of_kind_inline(conn, id, kind),
            events::last_of_kind(&self.read, id, kind),
        )
        .await
    }

    async fn put_artifact(
        &self,
        id: &TaskId,
        at: i64,
        artifact: &NewArtifact,
    ) -> Result<(), StoreError> {
        self.writing(async {
            match self.fenced(id).await? {
                Some(mut tx) => {
                    let done = events::put_artifact(&mut tx, id, at, artifact).await?;
                    tx.commit().await?;
                    Ok(done)
                }
                None => {
                    let mut conn = self.write.acquire().await?;
                    events::put_artifact(&mut conn, id, at, artifact).await
                }
            }
        })
        .await
    }

    async fn artifacts(&self, id: &TaskId) -> Result<Vec<Artifact>, StoreError> {
        events::artifacts(&self.read, id).await
    }

    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
        tasks::count_by_status(&self.read).await
    }

    async fn queue_position(&self, id: &TaskId) -> Result<Option<u64>, StoreError> {
        tasks::queue_position(&self.read, id).await
    }

    async fn tasks_in(&self, statuses: &[TaskStatus]) -> Result<Vec<Task>, StoreError> {
        tasks::tasks_in(&self.read, statuses).await
    }

    async fn purge_terminal(&self, before: i64, limit: u32) -> Result<Vec<Task>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            let purged = tasks::purge(&mut tx, before, limit).await?;
            for task in &purged {
                approvals::purge_task(&mut tx, &task.id).await?;
            }
            approvals::purge_audit(&mut tx, before).await?;
            workspaces::purge(&mut tx, before).await?;
            tx.commit().await?;
            Ok(purged)
        })
        .await
    }

    async fn put_input_request(&self, input: &PendingInput) -> Result<(), StoreError> {
        self.writing(async {
            match self.fenced(&input.task_id).await? {
                Some(mut tx) => {
                    let done = inputs::put(&mut tx, input).await?;
                    tx.commit().await?;
                    Ok(done)
                }
                None => {
                    let mut conn = self.write.acquire().await?;
                    inputs::put(&mut conn, input).await
                }
            }
        })
        .await
    }

    async fn delete_input_request(
        &self,
        task: &TaskId,
        request_id: &str,
    ) -> Result<bool, StoreError> {
        self.writing(async {
            match self.fenced(task).await? {
                Some(mut tx) => {
                    let done = inputs::delete(&mut tx, task, request_id).await?;
                    tx.commit().await?;
                    Ok(done)
                }
                None => {
                    let mut conn = self.write.acquire().await?;
                    inputs::delete(&mut conn, task, request_id).await
                }
            }
        })
        .await
    }

    async fn input_requests(&self, task: &TaskId) -> Result<Vec<PendingInput>, StoreError> {
        // Nothing bounds how many requests a task has open, so the inline read itself gives up
        // past MAX_ROWS.
        self.small_read(
            inline::MAX_ROWS,
            |conn| inputs::of_task_inline(conn, task),
            inputs::of_task(&self.read, task),
        )
        .await
    }

    async fn clear_input_requests(&self, task: &TaskId) -> Result<(), StoreError> {
        self.writing(async {
            match self.fenced(task).await? {
                Some(mut tx) => {
                    let done = inputs::clear(&mut tx, task).await?;
                    tx.commit().await?;
                    Ok(done)
                }
                None => {
                    let mut conn = self.write.acquire().await?;
                    inputs::clear(&mut conn, task).await
                }
            }
        })
        .await
    }
}

#[async_trait]
impl InstanceStore for SqliteStore {
    async fn register_instance(&self, record: &InstanceRecord) -> Result<(), StoreError> {
        self.writing(async {
            sqlx::query(instances::REGISTER)
                .bind(record.id.as_str())
                .bind(record.host.as_str())
                .bind(i64::from(record.pid))
                .bind(record.started)
                .bind(record.heartbeat)
                .bind(record.draining)
                .execute(&self.write)
                .await?;
            Ok(())
        })
        .await
    }

    async fn heartbeat(
        &self,
        id: &str,
        at: i64,
        lease_until: i64,
    ) -> Result<Option<u64>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            let beat = sqlx::query(instances::BEAT)
                .bind(at)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            if beat.rows_affected() == 0 {
                return Ok(None);
            }
            let renewed = sqlx::query(sqlx::AssertSqlSafe(instances::renew()))
                .bind(lease_until)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(renewed.rows_affected()))
        })
        .await
    }

    async fn set_draining(&self, id: &str) -> Result<(), StoreError> {
        self.writing(async {
            sqlx::query(instances::DRAIN)
                .bind(true)
                .bind(id)
                .execute(&self.write)
                .await?;
            Ok(())
        })
        .await
    }

    async fn deregister_instance(&self, id: &str) -> Result<(), StoreError> {
        self.writing(async {
            sqlx::query(instances::DEREGISTER)
                .bind(id)
                .execute(&self.write)
                .await?;
            Ok(())
        })
        .await
    }

    async fn expire_instances(
        &self,
        before: i64,
        caller: &str,
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        self.writing(async {
            let rows = sqlx::query(instances::EXPIRE)
                .bind(before)
                .bind(caller)
                .fetch_all(&self.write)
                .await?;
            rows.iter().map(instances::record_from_row).collect()
        })
        .await
    }

    async fn take_over(
        &self,
        id: &TaskId,
        predecessor: &str,
        expired_before: i64,
        grant: &LeaseGrant,
    ) -> Result<Option<Task>, StoreError> {
        self.writing(async {
            let row = sqlx::query(sqlx::AssertSqlSafe(instances::take_over()))
                .bind(grant.owner.as_str())
                .bind(grant.owner.as_str())
                .bind(grant.until)
                .bind(id.as_str())
                .bind(predecessor)
                .bind(expired_before)
                .fetch_optional(&self.write)
                .await?;
            let task = row.as_ref().map(crate::rows::task_from_row).transpose()?;
            if let Some(task) = &task {
                self.held.hold(task);
            }
            Ok(task)
        })
        .await
    }

    async fn rescuer_lock(
        &self,
        _holder: &str,
        _now: i64,
        _until: i64,
    ) -> Result<bool, StoreError> {
        // One process per file: the duty is always this one's.
        Ok(true)
    }

    async fn take_rate(
        &self,
        key: &str,
        interval_ms: i64,
        tolerance_ms: i64,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        self.writing(async {
            let taken = sqlx::query(instances::RATE_TAKE)
                .bind(key)
                .bind(now.saturating_add(interval_ms))
                .bind(now)
                .bind(now)
                .bind(interval_ms)
                .bind(now)
                .bind(now)
                .bind(now)
                .bind(tolerance_ms)
                .fetch_optional(&self.write)
                .await?;
            if taken.is_some() {
                return Ok(None);
            }
            let tat: i64 = sqlx::query_scalar(instances::RATE_TAT)
                .bind(key)
                .fetch_one(&self.write)
                .await?;
            Ok(Some(
                tat.saturating_sub(tolerance_ms).saturating_sub(now).max(1),
            ))
        })
        .await
    }

    async fn record_call(
        &self,
        caller: &str,
        key: &str,
        at: i64,
        since: i64,
        keep: u32,
    ) -> Result<Vec<String>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            sqlx::query(repeats::CALLS_FORGET)
                .bind(since)
                .execute(&mut *tx)
                .await?;
            sqlx::query(repeats::CALLS_RECORD)
                .bind(caller)
                .bind(at)
                .bind(key)
                .execute(&mut *tx)
                .await?;
            let latest: Vec<(i64, String)> = sqlx::query_as(repeats::CALLS_LATEST)
                .bind(caller)
                .bind(i64::from(keep))
                .fetch_all(&mut *tx)
                .await?;
            let (oldest, keys) = repeats::oldest_first(latest);
            if let Some(oldest) = oldest {
                sqlx::query(repeats::CALLS_TRIM)
                    .bind(caller)
                    .bind(oldest)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(keys)
        })
        .await
    }

    fn is_shared(&self) -> bool {
        false
    }

    async fn instances(&self) -> Result<Vec<InstanceSummary>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(instances::list()))
            .fetch_all(&self.read)
            .await?;
        rows.iter().map(instances::summary_from_row).collect()
    }
}

#[async_trait]
impl ApprovalStore for SqliteStore {
    async fn insert_approval(&self, approval: &Approval) -> Result<(), StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            approvals::insert(&mut tx, approval).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn approvals_for_task(
        &self,
        agent: &AgentId,
        task: &TaskId,
        project: &str,
    ) -> Result<Vec<Approval>, StoreError> {
        approvals::for_task(&self.read, agent, task, project).await
    }

    async fn list_approvals(
        &self,
        agent: &AgentId,
        task: Option<&TaskId>,
    ) -> Result<Vec<Approval>, StoreError> {
        approvals::list(&self.read, agent, task).await
    }

    async fn revoke_approval(
        &self,
        agent: &AgentId,
        id: &str,
    ) -> Result<Option<Approval>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            let revoked = approvals::revoke(&mut tx, agent, id).await?;
            tx.commit().await?;
            Ok(revoked)
        })
        .await
    }

    async fn append_audit(&self, record: &AuditRecord) -> Result<i64, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            let seq = approvals::append_audit(&mut tx, record).await?;
            tx.commit().await?;
            Ok(seq)
        })
        .await
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        approvals::audit(&self.read, filter).await
    }
}

#[async_trait]
impl crate::ChannelStore for SqliteStore {
    async fn put_channel(&self, record: &crate::ChannelRecord) -> Result<(), StoreError> {
        self.writing(async {
            let mut conn = self.write.acquire().await?;
            channels::put(&mut conn, record).await
        })
        .await
    }

    async fn channel(
        &self,
        integration: &str,
        task: &TaskId,
    ) -> Result<Option<crate::ChannelRecord>, StoreError> {
        channels::get(&self.read, integration, task).await
    }

    async fn channel_by_id(
        &self,
        integration: &str,
        channel_id: &str,
    ) -> Result<Option<crate::ChannelRecord>, StoreError> {
        channels::by_id(&self.read, integration, channel_id).await
    }

    async fn open_channels(
        &self,
        integration: &str,
    ) -> Result<Vec<crate::ChannelRecord>, StoreError> {
        channels::open(&self.read, integration).await
    }

    async fn cursor(&self, integration: &str, name: &str) -> Result<Option<String>, StoreError> {
        channels::cursor(&self.read, integration, name).await
    }

    async fn set_cursor(
        &self,
        integration: &str,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.writing(async {
            let mut conn = self.write.acquire().await?;
            channels::set_cursor(&mut conn, integration, name, value).await
        })
        .await
    }

    async fn mark_applied(
        &self,
        integration: &str,
        key: &str,
        at: i64,
    ) -> Result<bool, StoreError> {
        self.writing(async {
            let mut conn = self.write.acquire().await?;
            channels::mark_applied(&mut conn, integration, key, at).await
        })
        .await
    }
}

#[async_trait]
impl WorkspaceStore for SqliteStore {
    async fn insert_workspace(
        &self,
        record: &WorkspaceRecord,
    ) -> Result<WorkspaceRecord, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write().await?;
            let stored = workspaces::insert_new(&mut tx, record).await?;
            tx.commit().await?;
            Ok(stored)
        })
        .await
    }

    async fn put_workspace(&self, record: &WorkspaceRecord) -> Result<(), StoreError> {
        self.writing(async {
            let mut conn = self.write.acquire().await?;
            workspaces::put(&mut conn, record).await
        })
        .await
    }

    async fn workspace(&self, task: &TaskId) -> Result<Option<WorkspaceRecord>, StoreError> {
        workspaces::get(&self.read, task).await
    }

    async fn workspaces_due(
        &self,
        now: i64,
        limit: u32,
    ) -> Result<Vec<WorkspaceRecord>, StoreError> {
        workspaces::due(&self.read, now, limit).await
    }

    async fn next_workspace_due(&self) -> Result<Option<i64>, StoreError> {
        workspaces::next_due(&self.read).await
    }

    async fn workspace_backlog(&self) -> Result<crate::WorkspaceBacklog, StoreError> {
        workspaces::backlog(&self.read).await
    }
}

#[cfg(test)]
mod inline_tests;
#[cfg(test)]
mod reopen_tests;
#[cfg(test)]
mod tests;
