//! Requests of a working executor waiting for the owner's answer.

use handoff_task::{PendingInput, TaskId};
use sqlx::{PgConnection, PgPool, Row};

use super::query;
use crate::StoreError;

fn corrupt(e: impl ToString) -> StoreError {
    StoreError::Corrupt {
        table: "input_requests",
        message: e.to_string(),
    }
}

/// See [`crate::TaskStore::put_input_request`].
pub(super) async fn put(conn: &mut PgConnection, input: &PendingInput) -> Result<(), StoreError> {
    query(
        "INSERT INTO input_requests (task_id, request_id, request, asked_at, expires_at) \
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id, request_id) DO UPDATE SET \
         request = excluded.request, asked_at = excluded.asked_at, expires_at = excluded.expires_at",
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
    conn: &mut PgConnection,
    task: &TaskId,
    request_id: &str,
) -> Result<bool, StoreError> {
    let done = query("DELETE FROM input_requests WHERE task_id = ? AND request_id = ?")
        .bind(task.as_str())
        .bind(request_id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Removes every request of a task; runs inside the transaction that ends or re-queues it.
pub(super) async fn clear(conn: &mut PgConnection, task: &TaskId) -> Result<(), StoreError> {
    query("DELETE FROM input_requests WHERE task_id = ?")
        .bind(task.as_str())
        .execute(conn)
        .await?;
    Ok(())
}

/// See [`crate::TaskStore::input_requests`].
pub(super) async fn of_task(read: &PgPool, task: &TaskId) -> Result<Vec<PendingInput>, StoreError> {
    let rows = query(
        "SELECT request_id, request, asked_at, expires_at FROM input_requests \
         WHERE task_id = ? ORDER BY asked_at, seq",
    )
    .bind(task.as_str())
    .fetch_all(read)
    .await?;
    rows.iter()
        .map(|row| {
            let request: String = row.try_get("request")?;
            Ok(PendingInput {
                task_id: task.clone(),
                request_id: row.try_get("request_id")?,
                request: serde_json::from_str(&request).map_err(corrupt)?,
                asked_at: row.try_get("asked_at")?,
                expires_at: row.try_get("expires_at")?,
            })
        })
        .collect()
}
