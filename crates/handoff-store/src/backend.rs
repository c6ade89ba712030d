//! What a store is beyond its statements: how it opens, locks and commits transactions, which
//! connections it reads and writes on, and how it records failing writes. [`SqliteStore`] and
//! [`PgStore`] each implement [`Backend`]; the store traits are implemented once over it
//! ([`crate::impls`]), with the operations of [`crate::ops`].
//!
//! [`SqliteStore`]: crate::SqliteStore
//! [`PgStore`]: crate::PgStore

use std::{
    future::Future,
    ops::{Deref, DerefMut},
};

use async_trait::async_trait;
use handoff_task::{EventKind, NewTask, PendingInput, Task, TaskEvent, TaskId};
use tokio::sync::broadcast;

/// A transaction of `B`'s database.
pub(crate) type Tx<B> = sqlx::Transaction<'static, <B as Backend>::Db>;
/// A pooled connection of `B`'s database.
pub(crate) type Pooled<B> = sqlx::pool::PoolConnection<<B as Backend>::Db>;
/// A connection of `B`'s database.
pub(crate) type ConnOf<B> = <<B as Backend>::Db as sqlx::Database>::Connection;

use crate::{
    IdempotencyClaim, StoreError, StoreSignal, TaskFilter, TaskPage,
    fence::Held,
    ops,
    rows::StoredRow,
    sql::{Conn, Sql},
};

/// What a write transaction's read-then-write checks are about, so a store can serialize it
/// with exactly the writes it conflicts with (SQLite serializes every write anyway).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope<'a> {
    /// One task's row, events, requests and Letta record.
    Task(&'a str),
    /// Every claim.
    Claims,
    /// Housekeeping over many rows (the retention purge).
    Sweep,
    /// One caller's loop-guard history.
    Calls(&'a str),
    /// Nothing read-then-written.
    Plain,
}

/// A store's transactions, connections and write bookkeeping.
#[async_trait]
pub(crate) trait Backend: Send + Sync + 'static {
    /// The database; its connections run the operations.
    type Db: sqlx::Database<Connection: Conn>;
    /// Whether several instances may share the store ([`crate::InstanceStore::is_shared`]).
    const SHARED: bool;

    /// The leases this handle holds, which fence its writes.
    fn held(&self) -> &Held;
    /// Refuses a write before it is tried (a store known to be unreachable).
    fn before_write(&self) -> Result<(), StoreError>;
    /// Records whether a write went through.
    fn after_write<T>(&self, result: &Result<T, StoreError>);
    /// A write transaction serialized with the writes `scope` conflicts with.
    async fn begin(&self, scope: Scope<'_>) -> Result<Tx<Self>, StoreError>;
    /// A submission's write transaction (its keys and the backlog cap serialized), and the
    /// queued tasks counted under its locks when the backend had to count them.
    async fn begin_insert(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<(Tx<Self>, Option<i64>), StoreError>;
    /// A read-only transaction: one snapshot for several reads.
    async fn snapshot(&self) -> Result<Tx<Self>, StoreError>;
    /// A connection for single-statement writes.
    async fn writer(&self) -> Result<Pooled<Self>, StoreError>;
    /// A connection for reads.
    async fn reader(&self) -> Result<Pooled<Self>, StoreError>;
    /// Queues `signal` for the other instances sharing the store, sent when `tx` commits.
    async fn notify(tx: &mut Tx<Self>, signal: &StoreSignal) -> Result<(), StoreError>;
    /// This handle's own wake-up after a write that signalled committed.
    fn notified(&self, signal: StoreSignal);
    /// Tells every listening instance `body` ([`crate::PeerStore::broadcast`]).
    async fn send_broadcast(&self, body: &str) -> Result<(), StoreError>;
    /// The wake-ups from now on ([`crate::PeerStore::signals`]).
    async fn subscribe(&self) -> Result<broadcast::Receiver<StoreSignal>, StoreError>;
    /// Takes or renews the rescuer's duty ([`crate::InstanceStore::rescuer_lock`]).
    async fn take_rescuer(&self, holder: &str, now: i64, until: i64) -> Result<bool, StoreError>;

    /// One task (SQLite answers it on the calling thread when it can).
    async fn read_task(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        ops::tasks::get(&mut *self.reader().await?, id).await
    }
    /// A page of tasks.
    async fn read_list(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
        ops::task_list::list(&mut *self.reader().await?, filter).await
    }
    /// A task's last `n` events.
    async fn read_recent(&self, id: &TaskId, n: u32) -> Result<Vec<TaskEvent>, StoreError> {
        ops::events::recent(&mut *self.reader().await?, id, n).await
    }
    /// A task's newest event of `kind`.
    async fn read_last_of_kind(
        &self,
        id: &TaskId,
        kind: EventKind,
    ) -> Result<Option<TaskEvent>, StoreError> {
        ops::events::last_of_kind(&mut *self.reader().await?, id, kind).await
    }
    /// A task's open input requests.
    async fn read_inputs(&self, task: &TaskId) -> Result<Vec<PendingInput>, StoreError> {
        ops::inputs::of_task(&mut *self.reader().await?, task).await
    }
}

/// Runs one write on `store`, recording whether it went through.
pub(crate) async fn writing<B: Backend, T>(
    store: &B,
    write: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    store.before_write()?;
    let result = write.await;
    store.after_write(&result);
    result
}

/// Refuses a write about a task `held` holds once its row names another owner or fencing token
/// (see [`crate::fence`]); the dialect's check also keeps the row from changing hands until the
/// write commits.
async fn check_fence<C: Conn + ?Sized>(
    held: &Held,
    conn: &mut C,
    id: &TaskId,
) -> Result<(), StoreError> {
    if !held.holds(id) {
        return Ok(());
    }
    let row = Sql::new(C::FENCE_OF)
        .bind(id.as_str())
        .fetch_optional(conn)
        .await?;
    let stored = match row {
        Some(row) => Some((row.text_opt("tasks", "owner")?, row.int("tasks", "fence")?)),
        None => None,
    };
    held.verify(id, stored)
}

/// A transaction about task `id`: serialized with its other writes, its fence checked when
/// this handle holds its lease.
pub(crate) async fn begin_task<B: Backend>(store: &B, id: &TaskId) -> Result<Tx<B>, StoreError> {
    let mut tx = store.begin(Scope::Task(id.as_str())).await?;
    check_fence(store.held(), &mut *tx, id).await?;
    Ok(tx)
}

/// Where a write about one task runs: a checked transaction when this handle holds the task's
/// lease, else a plain connection (the write goes on unfenced, as before leases).
pub(crate) enum TaskWriter<B: Backend> {
    /// Fenced: committed by [`TaskWriter::finish`].
    Fenced(Tx<B>),
    /// Unfenced.
    Plain(Pooled<B>),
}

impl<B: Backend> TaskWriter<B> {
    /// The writer for task `id`.
    pub(crate) async fn open(store: &B, id: &TaskId) -> Result<Self, StoreError> {
        if store.held().holds(id) {
            Ok(Self::Fenced(begin_task(store, id).await?))
        } else {
            Ok(Self::Plain(store.writer().await?))
        }
    }

    /// Commits a fenced write.
    pub(crate) async fn finish(self) -> Result<(), StoreError> {
        match self {
            Self::Fenced(tx) => Ok(tx.commit().await?),
            Self::Plain(_) => Ok(()),
        }
    }
}

impl<B: Backend> Deref for TaskWriter<B> {
    type Target = ConnOf<B>;

    fn deref(&self) -> &ConnOf<B> {
        match self {
            Self::Fenced(tx) => tx,
            Self::Plain(conn) => conn,
        }
    }
}

impl<B: Backend> DerefMut for TaskWriter<B> {
    fn deref_mut(&mut self) -> &mut ConnOf<B> {
        match self {
            Self::Fenced(tx) => tx,
            Self::Plain(conn) => conn,
        }
    }
}
