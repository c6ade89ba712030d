//! Requests of a working executor waiting for the owner's answer.

use std::sync::LazyLock;

use handoff_task::{PendingInput, TaskId};
use sqlx::{SqliteConnection, SqlitePool};

use super::inline::{MAX_ROWS, Miss, Named, column_names};
use crate::{StoreError, rows::StoredRow};

const TABLE: &str = "input_requests";

fn corrupt(e: impl ToString) -> StoreError {
    StoreError::Corrupt {
        table: TABLE,
        message: e.to_string(),
    }
}

/// See [`crate::TaskStore::put_input_request`].
pub(super) async fn put(
    conn: &mut SqliteConnection,
    input: &PendingInput,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT OR REPLACE INTO input_requests (task_id, request_id, request, asked_at, expires_at) \
         VALUES (?, ?, ?, ?, ?)",
    )
    .bind(input.task_id.as_str())
    .bind(&input.request_id)
    .bind(input.request.to_string())
    .bind(input.asked_at)
    .bind(input.expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// See [`crate::TaskStore::delete_input_request`].
pub(super) async fn delete(
    conn: &mut SqliteConnection,
    task: &TaskId,
    request_id: &str,
) -> Result<bool, StoreError> {
    let done = sqlx::query("DELETE FROM input_requests WHERE task_id = ? AND request_id = ?")
        .bind(task.as_str())
        .bind(request_id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Removes every request of a task; runs inside the transaction that ends or re-queues it.
pub(super) async fn clear(conn: &mut SqliteConnection, task: &TaskId) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM input_requests WHERE task_id = ?")
        .bind(task.as_str())
        .execute(conn)
        .await?;
    Ok(())
}

/// The columns [`pending_from_row`] reads.
macro_rules! pending_columns {
    () => {
        "request_id, request, asked_at, expires_at"
    };
}

/// A task's open requests, oldest first.
const OF_TASK: &str = concat!(
    "SELECT ",
    pending_columns!(),
    " FROM input_requests WHERE task_id = ? ORDER BY asked_at, rowid"
);

/// The names of [`pending_columns`], for rows read inline.
static PENDING_COLUMNS: LazyLock<Vec<&str>> = LazyLock::new(|| column_names(pending_columns!()));

/// See [`crate::TaskStore::input_requests`].
pub(super) async fn of_task(
    read: &SqlitePool,
    task: &TaskId,
) -> Result<Vec<PendingInput>, StoreError> {
    let rows = sqlx::query(OF_TASK)
        .bind(task.as_str())
        .fetch_all(read)
        .await?;
    rows.iter().map(|row| pending_from_row(task, row)).collect()
}

/// [`of_task`] on the calling thread (see [`super::inline`]).
pub(super) fn of_task_inline(
    conn: &rusqlite::Connection,
    task: &TaskId,
) -> Result<Vec<PendingInput>, Miss> {
    let mut stmt = conn.prepare_cached(OF_TASK)?;
    let mut rows = stmt.query([task.as_str()])?;
    let mut pending = Vec::new();
    while let Some(row) = rows.next()? {
        if pending.len() >= MAX_ROWS as usize {
            return Err(Miss::Long);
        }
        pending.push(pending_from_row(task, &Named::new(row, &PENDING_COLUMNS))?);
    }
    Ok(pending)
}

/// One row selected with [`pending_columns`].
fn pending_from_row(task: &TaskId, row: &impl StoredRow) -> Result<PendingInput, StoreError> {
    let request = row.text(TABLE, "request")?;
    Ok(PendingInput {
        task_id: task.clone(),
        request_id: row.text(TABLE, "request_id")?,
        request: serde_json::from_str(&request).map_err(corrupt)?,
        asked_at: row.int(TABLE, "asked_at")?,
        expires_at: row.int(TABLE, "expires_at")?,
    })
}
