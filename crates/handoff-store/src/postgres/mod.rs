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
//! The SQL is shared in shape with the SQLite modules: queries are written with `?` and
//! [`query`] numbers them (`$1`, `$2`, ...) for PostgreSQL.

mod approvals;
mod channels;
mod events;
mod inputs;
mod locks;
mod peers;
mod reach;
mod tasks;
mod workspaces;

use std::{future::Future, sync::Arc, time::Duration};

use async_trait::async_trait;
use handoff_task::{
    AgentId, Approval, Artifact, AuditRecord, EventKind, NewEvent, NewTask, PendingInput, Task,
    TaskEvent, TaskId, TaskStatus, WorkspaceRecord,
};
use serde_json::Value;
use sqlx::{
    AssertSqlSafe, PgPool, Postgres, Transaction,
    migrate::Migrator,
    postgres::{PgArguments, PgConnectOptions, PgPoolOptions, PgRow},
    query::{Query, QueryAs, QueryScalar},
};
use tokio::sync::watch;

use crate::{
    ApprovalStore, AuditFilter, ClaimLimits, IdempotencyClaim, InsertOutcome, InstanceRecord,
    InstanceStore, InstanceSummary, LeaseGrant, NewArtifact, StatusChange, StoreError, TaskFilter,
    TaskPage, TaskStore, WorkspaceStore, fence::Held, instances, repeats, rows::StoredRow,
};

/// [`crate::fence::FENCE_OF`], holding the row against a takeover until the write commits.
const FENCE_FOR_SHARE: &str = "SELECT owner, fence FROM tasks WHERE id = ? FOR SHARE";

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

/// `sqlx::query` for SQL written with `?` placeholders.
pub(super) fn query<'q>(sql: &str) -> Query<'q, Postgres, PgArguments> {
    sqlx::query(AssertSqlSafe(numbered(sql)))
}

/// `sqlx::query_as` for SQL written with `?` placeholders.
pub(super) fn query_as<'q, O>(sql: &str) -> QueryAs<'q, Postgres, O, PgArguments>
where
    O: for<'r> sqlx::FromRow<'r, PgRow>,
{
    sqlx::query_as(AssertSqlSafe(numbered(sql)))
}

/// `sqlx::query_scalar` for SQL written with `?` placeholders.
pub(super) fn query_scalar<'q, O>(sql: &str) -> QueryScalar<'q, Postgres, O, PgArguments>
where
    (O,): for<'r> sqlx::FromRow<'r, PgRow>,
{
    sqlx::query_scalar(AssertSqlSafe(numbered(sql)))
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
            query(
                "INSERT INTO store_probe (id, at) VALUES (1, ?) \
                 ON CONFLICT (id) DO UPDATE SET at = excluded.at",
            )
            .bind(handoff_task::unix_millis_now())
            .execute(&self.pool)
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

    /// Runs one write, recording whether the database took it: a connection or I/O failure
    /// marks writes as failing, a success clears it, a refused request changes nothing.
    async fn writing<T>(
        &self,
        write: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        // Refused unattempted: the probe, not this write, tells whether writes work.
        self.up()?;
        let result = write.await;
        match &result {
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
        result
    }

    /// A transaction holding `scope`'s lock from its first statement.
    async fn begin_write(
        &self,
        scope: locks::Scope<'_>,
    ) -> Result<Transaction<'static, Postgres>, StoreError> {
        let mut tx = self.pool.begin().await?;
        locks::lock(&mut tx, scope).await?;
        Ok(tx)
    }

    /// A transaction about task `id`: its lock, and its fence checked when this handle holds
    /// its lease.
    async fn begin_task(&self, id: &TaskId) -> Result<Transaction<'static, Postgres>, StoreError> {
        let mut tx = self.begin_write(locks::Scope::Task(id.as_str())).await?;
        self.check_fence(&mut tx, id).await?;
        Ok(tx)
    }

    /// A submission's transaction: the locks of the keys it checks, and the backlog admission
    /// lock — shared while the queue is far enough below `max_queued` that every session of
    /// the server submitting at once could not pass it, else exclusive ([`locks`]).
    async fn begin_insert(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<Transaction<'static, Postgres>, StoreError> {
        let mut exclusive = false;
        loop {
            let mut tx = self.pool.begin().await?;
            let agent = task.agent_id.as_str();
            if let Some(claim) = idempotency {
                let key = locks::agent_key(agent, &claim.key);
                locks::lock(&mut tx, locks::Scope::Idempotency(&key)).await?;
            }
            if let Some(guard) = &task.repeat_guard {
                let key = locks::agent_key(agent, &guard.key);
                locks::lock(&mut tx, locks::Scope::Repeat(&key)).await?;
            }
            locks::admission(&mut tx, exclusive).await?;
            if exclusive || !tasks::near_cap(&mut tx, max_queued, self.sessions).await? {
                return Ok(tx);
            }
            // Near the cap: counted again under the exclusive lock.
            tx.rollback().await?;
            exclusive = true;
        }
    }

    /// Refuses a write about a task this handle holds once its row names another owner or
    /// fencing token (see [`crate::fence`]).
    async fn check_fence(
        &self,
        conn: &mut sqlx::PgConnection,
        id: &TaskId,
    ) -> Result<(), StoreError> {
        if !self.held.holds(id) {
            return Ok(());
        }
        // `FOR SHARE`: a takeover cannot commit between this check and the write's commit.
        let row = query(FENCE_FOR_SHARE)
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
    ) -> Result<Option<Transaction<'static, Postgres>>, StoreError> {
        if !self.held.holds(id) {
            return Ok(None);
        }
        Ok(Some(self.begin_task(id).await?))
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
            let update = query(sql).bind(value).bind(id.as_str());
            match self.fenced(id).await? {
                Some(mut tx) => {
                    update.execute(&mut *tx).await?;
                    tx.commit().await?;
                }
                None => {
                    update.execute(&self.pool).await?;
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
            // Its own LISTEN connection, as another process would have.
            listener: peers::Listener::default(),
            ..self.clone()
        }
    }
}

#[async_trait]
impl TaskStore for PgStore {
    async fn insert_task(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<InsertOutcome, StoreError> {
        self.writing(async {
            let mut tx = self.begin_insert(task, idempotency, max_queued).await?;
            let outcome = tasks::insert(&mut tx, task, idempotency, max_queued).await?;
            tx.commit().await?;
            Ok(outcome)
        })
        .await
    }

    async fn find_repeated(&self, task: &NewTask) -> Result<Option<Vec<TaskId>>, StoreError> {
        let mut conn = self.up()?.acquire().await?;
        tasks::find_repeated(&mut conn, task).await
    }

    async fn get_task(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        tasks::get(self.up()?, id).await
    }

    async fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
        tasks::list(self.up()?, filter).await
    }

    async fn claim(
        &self,
        limits: ClaimLimits,
        at: i64,
        lease: Option<&LeaseGrant>,
    ) -> Result<Option<Task>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write(locks::Scope::Claims).await?;
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
            let mut tx = self.begin_task(id).await?;
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
        let mut conn = self.up()?.acquire().await?;
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
            let mut tx = self.begin_task(id).await?;
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
            query(
                "UPDATE tasks SET result_delivered_at = COALESCE(result_delivered_at, ?) \
                 WHERE id = ?",
            )
            .bind(at)
            .bind(id.as_str())
            .execute(&self.pool)
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
            let mut tx = self.begin_task(id).await?;
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
        events::page(self.up()?, id, offset, limit).await
    }

    async fn recent_events(&self, id: &TaskId, n: u32) -> Result<Vec<TaskEvent>, StoreError> {
        events::recent(self.up()?, id, n).await
    }

    async fn last_event_of_kind(
        &self,
        id: &TaskId,
        kind: EventKind,
    ) -> Result<Option<TaskEvent>, StoreError> {
        events::last_of_kind(self.up()?, id, kind).await
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
                    let mut conn = self.pool.acquire().await?;
                    events::put_artifact(&mut conn, id, at, artifact).await
                }
            }
        })
        .await
    }

    async fn artifacts(&self, id: &TaskId) -> Result<Vec<Artifact>, StoreError> {
        events::artifacts(self.up()?, id).await
    }

    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
        tasks::count_by_status(self.up()?).await
    }

    async fn queue_position(&self, id: &TaskId) -> Result<Option<u64>, StoreError> {
        tasks::queue_position(self.up()?, id).await
    }

    async fn tasks_in(&self, statuses: &[TaskStatus]) -> Result<Vec<Task>, StoreError> {
        tasks::tasks_in(self.up()?, statuses).await
    }

    async fn purge_terminal(&self, before: i64, limit: u32) -> Result<Vec<Task>, StoreError> {
        self.writing(async {
            let mut tx = self.begin_write(locks::Scope::Sweep).await?;
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
                    let mut conn = self.pool.acquire().await?;
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
                    let mut conn = self.pool.acquire().await?;
                    inputs::delete(&mut conn, task, request_id).await
                }
            }
        })
        .await
    }

    async fn input_requests(&self, task: &TaskId) -> Result<Vec<PendingInput>, StoreError> {
        inputs::of_task(self.up()?, task).await
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
                    let mut conn = self.pool.acquire().await?;
                    inputs::clear(&mut conn, task).await
                }
            }
        })
        .await
    }
}

#[async_trait]
impl InstanceStore for PgStore {
    async fn register_instance(&self, record: &InstanceRecord) -> Result<(), StoreError> {
        self.writing(async {
            query(instances::REGISTER)
                .bind(record.id.as_str())
                .bind(record.host.as_str())
                .bind(i64::from(record.pid))
                .bind(record.started)
                .bind(record.heartbeat)
                .bind(record.draining)
                .execute(&self.pool)
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
            let mut tx = self.pool.begin().await?;
            let beat = query(instances::BEAT)
                .bind(at)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            if beat.rows_affected() == 0 {
                return Ok(None);
            }
            let renewed = query(&instances::renew())
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
            query(instances::DRAIN)
                .bind(true)
                .bind(id)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }

    async fn deregister_instance(&self, id: &str) -> Result<(), StoreError> {
        self.writing(async {
            query(instances::DEREGISTER)
                .bind(id)
                .execute(&self.pool)
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
            let rows = query(instances::EXPIRE)
                .bind(before)
                .bind(caller)
                .fetch_all(&self.pool)
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
            let row = query(&instances::take_over())
                .bind(grant.owner.as_str())
                .bind(grant.owner.as_str())
                .bind(grant.until)
                .bind(id.as_str())
                .bind(predecessor)
                .bind(expired_before)
                .fetch_optional(&self.pool)
                .await?;
            let task = row.as_ref().map(crate::rows::task_from_row).transpose()?;
            if let Some(task) = &task {
                self.held.hold(task);
            }
            Ok(task)
        })
        .await
    }

    async fn rescuer_lock(&self, holder: &str, now: i64, until: i64) -> Result<bool, StoreError> {
        self.writing(async {
            let held = query(instances::RESCUER)
                .bind(holder)
                .bind(until)
                .bind(now)
                .fetch_optional(&self.pool)
                .await?;
            Ok(held.is_some())
        })
        .await
    }

    async fn take_rate(
        &self,
        key: &str,
        interval_ms: i64,
        tolerance_ms: i64,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        self.writing(async {
            let taken = query(instances::RATE_TAKE)
                .bind(key)
                .bind(now.saturating_add(interval_ms))
                .bind(now)
                .bind(now)
                .bind(interval_ms)
                .bind(now)
                .bind(now)
                .bind(now)
                .bind(tolerance_ms)
                .fetch_optional(&self.pool)
                .await?;
            if taken.is_some() {
                return Ok(None);
            }
            let tat: i64 = query_scalar(instances::RATE_TAT)
                .bind(key)
                .fetch_one(&self.pool)
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
            let mut tx = self.begin_write(locks::Scope::Calls(caller)).await?;
            query(repeats::CALLS_FORGET)
                .bind(since)
                .execute(&mut *tx)
                .await?;
            query(repeats::CALLS_RECORD)
                .bind(caller)
                .bind(at)
                .bind(key)
                .execute(&mut *tx)
                .await?;
            let latest: Vec<(i64, String)> = query_as(repeats::CALLS_LATEST)
                .bind(caller)
                .bind(i64::from(keep))
                .fetch_all(&mut *tx)
                .await?;
            let (oldest, keys) = repeats::oldest_first(latest);
            if let Some(oldest) = oldest {
                query(repeats::CALLS_TRIM)
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
        true
    }

    async fn instances(&self) -> Result<Vec<InstanceSummary>, StoreError> {
        let rows = query(&instances::list()).fetch_all(self.up()?).await?;
        rows.iter().map(instances::summary_from_row).collect()
    }
}

#[async_trait]
impl ApprovalStore for PgStore {
    async fn insert_approval(&self, approval: &Approval) -> Result<(), StoreError> {
        self.writing(async { approvals::insert(&mut *self.pool.acquire().await?, approval).await })
            .await
    }

    async fn approvals_for_task(
        &self,
        agent: &AgentId,
        task: &TaskId,
        project: &str,
    ) -> Result<Vec<Approval>, StoreError> {
        approvals::for_task(self.up()?, agent, task, project).await
    }

    async fn list_approvals(
        &self,
        agent: &AgentId,
        task: Option<&TaskId>,
    ) -> Result<Vec<Approval>, StoreError> {
        approvals::list(self.up()?, agent, task).await
    }

    async fn revoke_approval(
        &self,
        agent: &AgentId,
        id: &str,
    ) -> Result<Option<Approval>, StoreError> {
        self.writing(async {
            let mut tx = self.pool.begin().await?;
            let revoked = approvals::revoke(&mut tx, agent, id).await?;
            tx.commit().await?;
            Ok(revoked)
        })
        .await
    }

    async fn append_audit(&self, record: &AuditRecord) -> Result<i64, StoreError> {
        self.writing(async {
            approvals::append_audit(&mut *self.pool.acquire().await?, record).await
        })
        .await
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        approvals::audit(self.up()?, filter).await
    }
}

#[async_trait]
impl crate::ChannelStore for PgStore {
    async fn put_channel(&self, record: &crate::ChannelRecord) -> Result<(), StoreError> {
        self.writing(async {
            let mut conn = self.pool.acquire().await?;
            channels::put(&mut conn, record).await
        })
        .await
    }

    async fn channel(
        &self,
        integration: &str,
        task: &TaskId,
    ) -> Result<Option<crate::ChannelRecord>, StoreError> {
        channels::get(self.up()?, integration, task).await
    }

    async fn channel_by_id(
        &self,
        integration: &str,
        channel_id: &str,
    ) -> Result<Option<crate::ChannelRecord>, StoreError> {
        channels::by_id(self.up()?, integration, channel_id).await
    }

    async fn open_channels(
        &self,
        integration: &str,
    ) -> Result<Vec<crate::ChannelRecord>, StoreError> {
        channels::open(self.up()?, integration).await
    }

    async fn cursor(&self, integration: &str, name: &str) -> Result<Option<String>, StoreError> {
        channels::cursor(self.up()?, integration, name).await
    }

    async fn set_cursor(
        &self,
        integration: &str,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.writing(async {
            let mut conn = self.pool.acquire().await?;
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
            let mut conn = self.pool.acquire().await?;
            channels::mark_applied(&mut conn, integration, key, at).await
        })
        .await
    }
}

#[async_trait]
impl WorkspaceStore for PgStore {
    async fn insert_workspace(
        &self,
        record: &WorkspaceRecord,
    ) -> Result<WorkspaceRecord, StoreError> {
        self.writing(async {
            let mut tx = self
                .begin_write(locks::Scope::Task(record.task_id.as_str()))
                .await?;
            let stored = workspaces::insert_new(&mut tx, record).await?;
            tx.commit().await?;
            Ok(stored)
        })
        .await
    }

    async fn put_workspace(&self, record: &WorkspaceRecord) -> Result<(), StoreError> {
        self.writing(async {
            let mut conn = self.pool.acquire().await?;
            workspaces::put(&mut conn, record).await
        })
        .await
    }

    async fn workspace(&self, task: &TaskId) -> Result<Option<WorkspaceRecord>, StoreError> {
        workspaces::get(self.up()?, task).await
    }

    async fn workspaces_due(
        &self,
        now: i64,
        limit: u32,
    ) -> Result<Vec<WorkspaceRecord>, StoreError> {
        workspaces::due(self.up()?, now, limit).await
    }

    async fn next_workspace_due(&self) -> Result<Option<i64>, StoreError> {
        workspaces::next_due(self.up()?).await
    }

    async fn workspace_backlog(&self) -> Result<crate::WorkspaceBacklog, StoreError> {
        workspaces::backlog(self.up()?).await
    }
}

#[cfg(test)]
mod reach_tests;
#[cfg(test)]
mod tests;
