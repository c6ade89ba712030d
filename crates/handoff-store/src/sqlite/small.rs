//! The small reads SQLite answers on the calling thread (see [`super::inline`]): the same SQL
//! and row mapping as [`crate::ops`], run through rusqlite.

use std::sync::LazyLock;

use handoff_task::{EventKind, PendingInput, Task, TaskEvent, TaskId};
use rusqlite::{
    ToSql,
    types::{Null, ToSqlOutput, Value as SqlValue},
};
use sqlx::SqliteConnection;

use super::inline::{MAX_ROWS, Miss, Named, column_names};
use crate::TaskFilter;
use crate::ops::{
    events::{NEWEST, NEWEST_OF_KIND},
    inputs::{pending_columns, pending_from_row},
    task_list::{list_query, page_of},
    tasks::TASK_BY_ID,
};
use crate::rows::{event_columns, event_from_row, task_columns, task_from_row};
use crate::sql::{Arg, Conn};

/// The names of [`task_columns`], for rows read inline.
static TASK_COLUMNS: LazyLock<Vec<&str>> = LazyLock::new(|| column_names(task_columns!()));

/// The names of [`event_columns`], for rows read inline.
static EVENT_COLUMNS: LazyLock<Vec<&str>> = LazyLock::new(|| column_names(event_columns!()));

/// The names of [`pending_columns`], for rows read inline.
static PENDING_COLUMNS: LazyLock<Vec<&str>> = LazyLock::new(|| column_names(pending_columns!()));

/// A bound value as rusqlite binds it.
struct Bound<'a>(&'a Arg);

impl ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Arg::I64(Some(n)) => ToSqlOutput::Owned(SqlValue::Integer(*n)),
            Arg::I32(Some(n)) => ToSqlOutput::Owned(SqlValue::Integer(i64::from(*n))),
            Arg::Text(Some(text)) => text.to_sql()?,
            Arg::Bool(flag) => ToSqlOutput::Owned(SqlValue::Integer(i64::from(*flag))),
            Arg::Bytes(Some(bytes)) => bytes.to_sql()?,
            Arg::I64(None) | Arg::I32(None) | Arg::Text(None) | Arg::Bytes(None) => {
                Null.to_sql()?
            }
        })
    }
}

/// [`crate::ops::tasks::get`] on the calling thread.
pub(super) fn get_inline(conn: &rusqlite::Connection, id: &TaskId) -> Result<Option<Task>, Miss> {
    let mut stmt = conn.prepare_cached(TASK_BY_ID)?;
    let mut rows = stmt.query([id.as_str()])?;
    match rows.next()? {
        Some(row) => Ok(Some(task_from_row(&Named::new(row, &TASK_COLUMNS))?)),
        None => Ok(None),
    }
}

/// [`crate::ops::task_list::list`] on the calling thread.
pub(super) fn list_inline(
    conn: &rusqlite::Connection,
    filter: &TaskFilter,
) -> Result<crate::TaskPage, Miss> {
    if filter.limit == 0 {
        return Ok(page_of(Vec::new(), filter));
    }
    let query = list_query("", filter);
    let mut stmt = conn.prepare_cached(query.text())?;
    let mut rows = stmt.query(rusqlite::params_from_iter(query.args().iter().map(Bound)))?;
    let mut tasks = Vec::new();
    while let Some(row) = rows.next()? {
        tasks.push(task_from_row(&Named::new(row, &TASK_COLUMNS))?);
    }
    Ok(page_of(tasks, filter))
}

/// [`crate::ops::events::recent`] on the calling thread.
pub(super) fn recent_inline(
    conn: &rusqlite::Connection,
    id: &TaskId,
    n: u32,
) -> Result<Vec<TaskEvent>, Miss> {
    let mut stmt = conn.prepare_cached(NEWEST)?;
    let mut rows = stmt.query(rusqlite::params![id.as_str(), i64::from(n)])?;
    let mut events = Vec::new();
    while let Some(row) = rows.next()? {
        events.push(event_from_row(&Named::new(row, &EVENT_COLUMNS))?);
    }
    events.reverse();
    Ok(events)
}

/// [`crate::ops::events::last_of_kind`] on the calling thread.
pub(super) fn last_of_kind_inline(
    conn: &rusqlite::Connection,
    id: &TaskId,
    kind: EventKind,
) -> Result<Option<TaskEvent>, Miss> {
    let mut stmt = conn.prepare_cached(NEWEST_OF_KIND)?;
    let mut rows = stmt.query([id.as_str(), kind.as_str()])?;
    match rows.next()? {
        Some(row) => Ok(Some(event_from_row(&Named::new(row, &EVENT_COLUMNS))?)),
        None => Ok(None),
    }
}

/// [`crate::ops::inputs::of_task`] on the calling thread; gives up past [`MAX_ROWS`] (nothing
/// bounds how many requests a task has open).
pub(super) fn of_task_inline(
    conn: &rusqlite::Connection,
    task: &TaskId,
) -> Result<Vec<PendingInput>, Miss> {
    let mut stmt = conn.prepare_cached(<SqliteConnection as Conn>::INPUTS_OF_TASK)?;
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
