//! The Letta integration's durable records: one per task with a workspace block.

use handoff_task::{AgentId, BlockPhase, NotifyState, TaskId, WorkspaceRecord};
use sqlx::{Row, SqliteConnection, SqlitePool, sqlite::SqliteRow};

use super::limit::limit_param;
use crate::StoreError;
use crate::rows::{to_i64, to_u64};

fn corrupt(e: impl ToString) -> StoreError {
    StoreError::Corrupt {
        table: "letta_workspaces",
        message: e.to_string(),
    }
}

macro_rules! select_workspaces {
    ($($where:expr),+) => {
        concat!(
            "SELECT task_id, agent_id, label, block_id, phase, notify, notify_run_id, writes, ",
            "bytes_written, detach_at, delete_at, last_error, created_at, updated_at ",
            "FROM letta_workspaces WHERE ",
            $($where),+
        )
    };
}

fn from_row(row: &SqliteRow) -> Result<WorkspaceRecord, StoreError> {
    let task: String = row.try_get("task_id")?;
    let agent: String = row.try_get("agent_id")?;
    let phase: String = row.try_get("phase")?;
    let notify: String = row.try_get("notify")?;
    Ok(WorkspaceRecord {
        task_id: TaskId::parse(&task).map_err(corrupt)?,
        agent_id: AgentId::parse(&agent).map_err(corrupt)?,
        label: row.try_get("label")?,
        block_id: row.try_get("block_id")?,
        phase: phase.parse::<BlockPhase>().map_err(corrupt)?,
        notify: notify.parse::<NotifyState>().map_err(corrupt)?,
        notify_run_id: row.try_get("notify_run_id")?,
        writes: to_u64(row.try_get("writes")?),
        bytes_written: to_u64(row.try_get("bytes_written")?),
        detach_at: row.try_get("detach_at")?,
        delete_at: row.try_get("delete_at")?,
        last_error: row.try_get("last_error")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// Inserts or replaces the record (its task's writer is the only one changing it).
pub(super) async fn put(
    conn: &mut SqliteConnection,
    r: &WorkspaceRecord,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO letta_workspaces (task_id, agent_id, label, block_id, phase, notify, \
         notify_run_id, writes, bytes_written, detach_at, delete_at, last_error, created_at, \
         updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (task_id) DO UPDATE SET agent_id = excluded.agent_id, \
         label = excluded.label, block_id = excluded.block_id, phase = excluded.phase, \
         notify = excluded.notify, notify_run_id = excluded.notify_run_id, \
         writes = excluded.writes, bytes_written = excluded.bytes_written, \
         detach_at = excluded.detach_at, delete_at = excluded.delete_at, \
         last_error = excluded.last_error, updated_at = excluded.updated_at",
    )
    .bind(r.task_id.as_str())
    .bind(r.agent_id.as_str())
    .bind(&r.label)
    .bind(&r.block_id)
    .bind(r.phase.as_str())
    .bind(r.notify.as_str())
    .bind(&r.notify_run_id)
    .bind(to_i64(r.writes))
    .bind(to_i64(r.bytes_written))
    .bind(r.detach_at)
    .bind(r.delete_at)
    .bind(&r.last_error)
    .bind(r.created_at)
    .bind(r.updated_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts the record unless the task already has one; returns the stored record.
pub(super) async fn insert_new(
    conn: &mut SqliteConnection,
    r: &WorkspaceRecord,
) -> Result<WorkspaceRecord, StoreError> {
    if let Some(existing) = get_on(&mut *conn, &r.task_id).await? {
        return Ok(existing);
    }
    put(&mut *conn, r).await?;
    Ok(r.clone())
}

async fn get_on(
    conn: &mut SqliteConnection,
    task: &TaskId,
) -> Result<Option<WorkspaceRecord>, StoreError> {
    let row = sqlx::query(select_workspaces!("task_id = ?"))
        .bind(task.as_str())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// One task's record.
pub(super) async fn get(
    read: &SqlitePool,
    task: &TaskId,
) -> Result<Option<WorkspaceRecord>, StoreError> {
    let mut conn = read.acquire().await?;
    get_on(&mut conn, task).await
}

/// Records with work to do: a live writer's (create, update, final write), an owed
/// notification, or a detach or delete due at `now`.
pub(super) async fn due(
    read: &SqlitePool,
    now: i64,
    limit: u32,
) -> Result<Vec<WorkspaceRecord>, StoreError> {
    let rows = sqlx::query(select_workspaces!(
        "phase IN ('creating', 'attached') OR notify IN ('pending', 'sending') \
         OR (phase = 'final' AND detach_at <= ?) OR (phase = 'detached' AND delete_at <= ?) \
         ORDER BY updated_at",
        limit_param!()
    ))
    .bind(now)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(read)
    .await?;
    rows.iter().map(from_row).collect()
}

/// The earliest detach or delete still scheduled (Unix ms).
pub(super) async fn next_due(read: &SqlitePool) -> Result<Option<i64>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT MIN(at) FROM (SELECT detach_at AS at FROM letta_workspaces WHERE phase = 'final' \
         UNION ALL SELECT delete_at FROM letta_workspaces WHERE phase = 'detached')",
    )
    .fetch_one(read)
    .await?)
}

/// Counts what the records still owe, by kind.
pub(super) async fn backlog(read: &SqlitePool) -> Result<crate::WorkspaceBacklog, StoreError> {
    let row = sqlx::query(
        "SELECT \
         COALESCE(SUM(phase IN ('creating', 'attached')), 0) AS block_writes, \
         COALESCE(SUM(notify IN ('pending', 'sending')), 0) AS notifications, \
         COALESCE(SUM(phase = 'final'), 0) AS detaches, \
         COALESCE(SUM(phase = 'detached'), 0) AS deletes \
         FROM letta_workspaces \
         WHERE phase NOT IN ('deleted', 'abandoned') OR notify IN ('pending', 'sending')",
    )
    .fetch_one(read)
    .await?;
    let count = |name: &str| -> Result<u64, StoreError> { Ok(to_u64(row.try_get(name)?)) };
    Ok(crate::WorkspaceBacklog {
        block_writes: count("block_writes")?,
        notifications: count("notifications")?,
        detaches: count("detaches")?,
        deletes: count("deletes")?,
    })
}

/// Forgets finished records (deleted or abandoned) last changed before `before`.
pub(super) async fn purge(conn: &mut SqliteConnection, before: i64) -> Result<u64, StoreError> {
    let done = sqlx::query(
        "DELETE FROM letta_workspaces WHERE phase IN ('deleted', 'abandoned') \
         AND notify NOT IN ('pending', 'sending') AND updated_at < ?",
    )
    .bind(before)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
