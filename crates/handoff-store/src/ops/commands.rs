//! Commands between instances ([`crate::PeerStore`]): the statements, once; each store adds
//! its own wake-ups around them.

use handoff_task::TaskId;

use crate::commands::{self, from_row};
use crate::rows::StoredRow;
use crate::sql::{Conn, Sql};
use crate::{PostedCommand, StoreError};

/// Posts a command; returns its id.
pub(crate) async fn post<C: Conn + ?Sized>(
    conn: &mut C,
    task: &TaskId,
    target: &str,
    body: &str,
    at: i64,
) -> Result<i64, StoreError> {
    Sql::new(commands::POST)
        .bind(task.as_str())
        .bind(target)
        .bind(body)
        .bind(at)
        .fetch_one(conn)
        .await?
        .int("commands", "id")
}

/// Takes the untaken commands `sql` ([`commands::TAKE`] or [`commands::TAKE_FOR_TASK`])
/// selects by `key`.
pub(crate) async fn take<C: Conn + ?Sized>(
    conn: &mut C,
    sql: &str,
    key: &str,
    at: i64,
) -> Result<Vec<PostedCommand>, StoreError> {
    let rows = Sql::new(sql).bind(at).bind(key).fetch_all(conn).await?;
    rows.iter().map(from_row).collect()
}

/// Withdraws an untaken command: whether it was.
pub(crate) async fn withdraw<C: Conn + ?Sized>(conn: &mut C, id: i64) -> Result<bool, StoreError> {
    Ok(Sql::new(commands::WITHDRAW).bind(id).execute(conn).await? == 1)
}

/// Answers a command: whether this was its first answer.
pub(crate) async fn reply<C: Conn + ?Sized>(
    conn: &mut C,
    id: i64,
    reply: &str,
    at: i64,
) -> Result<bool, StoreError> {
    let done = Sql::new(commands::REPLY)
        .bind(reply)
        .bind(at)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done == 1)
}

/// A command's answer, once given.
pub(crate) async fn reply_of<C: Conn + ?Sized>(
    conn: &mut C,
    id: i64,
) -> Result<Option<String>, StoreError> {
    let row = Sql::new(commands::REPLY_OF)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    Ok(row
        .map(|r| r.text_opt("commands", "reply"))
        .transpose()?
        .flatten())
}

/// The instance that last ran a task.
pub(crate) async fn ran_on<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
) -> Result<Option<String>, StoreError> {
    let row = Sql::new(commands::RAN_ON)
        .bind(id.as_str())
        .fetch_optional(conn)
        .await?;
    Ok(row
        .map(|r| r.text_opt("tasks", "ran_on"))
        .transpose()?
        .flatten())
}

/// Forgets old commands; how many.
pub(crate) async fn purge<C: Conn + ?Sized>(conn: &mut C, before: i64) -> Result<u64, StoreError> {
    Sql::new(commands::PURGE).bind(before).execute(conn).await
}
