//! Requests of a working executor waiting for the owner's answer.

use handoff_task::{PendingInput, TaskId};

use crate::sql::{Conn, Sql};
use crate::{StoreError, rows::StoredRow};

const TABLE: &str = "input_requests";

fn corrupt(e: impl ToString) -> StoreError {
    StoreError::Corrupt {
        table: TABLE,
        message: e.to_string(),
    }
}

/// See [`crate::TaskStore::put_input_request`].
pub(crate) async fn put<C: Conn + ?Sized>(
    conn: &mut C,
    input: &PendingInput,
) -> Result<(), StoreError> {
    Sql::new(C::PUT_INPUT)
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
pub(crate) async fn delete<C: Conn + ?Sized>(
    conn: &mut C,
    task: &TaskId,
    request_id: &str,
) -> Result<bool, StoreError> {
    let done = Sql::new("DELETE FROM input_requests WHERE task_id = ? AND request_id = ?")
        .bind(task.as_str())
        .bind(request_id)
        .execute(conn)
        .await?;
    Ok(done > 0)
}

/// Removes every request of a task; runs inside the transaction that ends or re-queues it.
pub(crate) async fn clear<C: Conn + ?Sized>(conn: &mut C, task: &TaskId) -> Result<(), StoreError> {
    Sql::new("DELETE FROM input_requests WHERE task_id = ?")
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
pub(crate) use pending_columns;

/// See [`crate::TaskStore::input_requests`].
pub(crate) async fn of_task<C: Conn + ?Sized>(
    conn: &mut C,
    task: &TaskId,
) -> Result<Vec<PendingInput>, StoreError> {
    let rows = Sql::new(C::INPUTS_OF_TASK)
        .bind(task.as_str())
        .fetch_all(conn)
        .await?;
    rows.iter().map(|row| pending_from_row(task, row)).collect()
}

/// One row selected with [`pending_columns`].
pub(crate) fn pending_from_row(
    task: &TaskId,
    row: &impl StoredRow,
) -> Result<PendingInput, StoreError> {
    let request = row.text(TABLE, "request")?;
    Ok(PendingInput {
        task_id: task.clone(),
        request_id: row.text(TABLE, "request_id")?,
        request: serde_json::from_str(&request).map_err(corrupt)?,
        asked_at: row.int(TABLE, "asked_at")?,
        expires_at: row.int(TABLE, "expires_at")?,
    })
}
