//! The Letta integration's durable records: one per task with a workspace block.

use super::limit_param;
use crate::StoreError;
use crate::rows::{StoredRow, to_i64, to_u64};
use crate::sql::{Conn, Sql};
use handoff_task::{AgentId, BlockPhase, NotifyState, TaskId, WorkspaceRecord};

const WORKSPACES: &str = "letta_workspaces";

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

fn from_row(row: &impl StoredRow) -> Result<WorkspaceRecord, StoreError> {
    let task = row.text(WORKSPACES, "task_id")?;
    let agent = row.text(WORKSPACES, "agent_id")?;
    let phase = row.text(WORKSPACES, "phase")?;
    let notify = row.text(WORKSPACES, "notify")?;
    Ok(WorkspaceRecord {
        task_id: TaskId::parse(&task).map_err(corrupt)?,
        agent_id: AgentId::parse(&agent).map_err(corrupt)?,
        label: row.text(WORKSPACES, "label")?,
        block_id: row.text_opt(WORKSPACES, "block_id")?,
        phase: phase.parse::<BlockPhase>().map_err(corrupt)?,
        notify: notify.parse::<NotifyState>().map_err(corrupt)?,
        notify_run_id: row.text_opt(WORKSPACES, "notify_run_id")?,
        writes: to_u64(row.int(WORKSPACES, "writes")?),
        bytes_written: to_u64(row.int(WORKSPACES, "bytes_written")?),
        detach_at: row.int_opt(WORKSPACES, "detach_at")?,
        delete_at: row.int_opt(WORKSPACES, "delete_at")?,
        last_error: row.text_opt(WORKSPACES, "last_error")?,
        created_at: row.int(WORKSPACES, "created_at")?,
        updated_at: row.int(WORKSPACES, "updated_at")?,
    })
}

/// Inserts or replaces the record (its task's writer is the only one changing it).
pub(crate) async fn put<C: Conn + ?Sized>(
    conn: &mut C,
    r: &WorkspaceRecord,
) -> Result<(), StoreError> {
    Sql::new(
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
pub(crate) async fn insert_new<C: Conn + ?Sized>(
    conn: &mut C,
    r: &WorkspaceRecord,
) -> Result<WorkspaceRecord, StoreError> {
    if let Some(existing) = get(conn, &r.task_id).await? {
        return Ok(existing);
    }
    put(conn, r).await?;
    Ok(r.clone())
}

/// One task's record.
pub(crate) async fn get<C: Conn + ?Sized>(
    conn: &mut C,
    task: &TaskId,
) -> Result<Option<WorkspaceRecord>, StoreError> {
    let row = Sql::new(select_workspaces!("task_id = ?"))
        .bind(task.as_str())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Records with work to do: a live writer's (create, update, final write), an owed
/// notification, or a detach or delete due at `now`.
pub(crate) async fn due<C: Conn + ?Sized>(
    conn: &mut C,
    now: i64,
    limit: u32,
) -> Result<Vec<WorkspaceRecord>, StoreError> {
    let rows = Sql::new(select_workspaces!(
        "phase IN ('creating', 'attached') OR notify IN ('pending', 'sending') \
         OR (phase = 'final' AND detach_at <= ?) OR (phase = 'detached' AND delete_at <= ?) \
         ORDER BY updated_at",
        limit_param!()
    ))
    .bind(now)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(conn)
    .await?;
    rows.iter().map(from_row).collect()
}

/// The earliest detach or delete still scheduled (Unix ms).
pub(crate) async fn next_due<C: Conn + ?Sized>(conn: &mut C) -> Result<Option<i64>, StoreError> {
    Sql::new(
        "SELECT MIN(at) AS at FROM (SELECT detach_at AS at FROM letta_workspaces \
         WHERE phase = 'final' \
         UNION ALL SELECT delete_at FROM letta_workspaces WHERE phase = 'detached') AS due",
    )
    .fetch_one(conn)
    .await?
    .int_opt(WORKSPACES, "at")
}

/// Counts what the records still owe, by kind.
pub(crate) async fn backlog<C: Conn + ?Sized>(
    conn: &mut C,
) -> Result<crate::WorkspaceBacklog, StoreError> {
    let row = Sql::new(
        "SELECT \
         COUNT(*) FILTER (WHERE phase IN ('creating', 'attached')) AS block_writes, \
         COUNT(*) FILTER (WHERE notify IN ('pending', 'sending')) AS notifications, \
         COUNT(*) FILTER (WHERE phase = 'final') AS detaches, \
         COUNT(*) FILTER (WHERE phase = 'detached') AS deletes \
         FROM letta_workspaces \
         WHERE phase NOT IN ('deleted', 'abandoned') OR notify IN ('pending', 'sending')",
    )
    .fetch_one(conn)
    .await?;
    let count = |name: &str| -> Result<u64, StoreError> { Ok(to_u64(row.int(WORKSPACES, name)?)) };
    Ok(crate::WorkspaceBacklog {
        block_writes: count("block_writes")?,
        notifications: count("notifications")?,
        detaches: count("detaches")?,
        deletes: count("deletes")?,
    })
}

/// Forgets finished records (deleted or abandoned) last changed before `before`.
pub(crate) async fn purge<C: Conn + ?Sized>(conn: &mut C, before: i64) -> Result<u64, StoreError> {
    let done = Sql::new(
        "DELETE FROM letta_workspaces WHERE phase IN ('deleted', 'abandoned') \
         AND notify NOT IN ('pending', 'sending') AND updated_at < ?",
    )
    .bind(before)
    .execute(conn)
    .await?;
    Ok(done)
}
