//! `list_tasks`: one newest-first page of tasks, read through sqlx's pool or on the calling
//! thread (see [`super::inline`]).

use handoff_task::{Task, TaskStatus};
use rusqlite::{
    ToSql,
    types::{ToSqlOutput, ValueRef},
};
use sqlx::{AssertSqlSafe, Sqlite, SqlitePool, query::Query, sqlite::SqliteArguments};

use super::inline::{Miss, Named};
use super::limit::limit_param;
use super::tasks::TASK_COLUMNS;
use crate::rows::{task_columns, task_from_row};
use crate::{StoreError, TaskFilter, TaskPage};

/// A built `list_tasks` query: its SQL and the values bound to its `?`s, in order.
pub(super) struct ListQuery {
    sql: String,
    binds: Vec<Bind>,
}

/// One bound value.
enum Bind {
    Text(String),
    Int(i64),
}

impl ToSql for Bind {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Bind::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
            Bind::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
        })
    }
}

impl ListQuery {
    /// The query for sqlx, its values bound.
    pub(super) fn sqlx(&self) -> Query<'_, Sqlite, SqliteArguments> {
        // Safe: the SQL is built from this file's literals only; every value is bound.
        let sql = AssertSqlSafe(self.sql.as_str());
        self.binds
            .iter()
            .fold(sqlx::query(sql), |query, bind| match bind {
                Bind::Text(text) => query.bind(text.as_str()),
                Bind::Int(n) => query.bind(*n),
            })
    }

    fn push(&mut self, sql: &str) {
        self.sql.push_str(sql);
    }

    fn bind(&mut self, sql: &str, value: Bind) {
        self.sql.push_str(sql);
        self.binds.push(value);
    }
}

/// The `list_tasks` query after `prefix` (`EXPLAIN QUERY PLAN ` in the index test). Each asked
/// state is its own newest-first walk of `tasks_agent_status`, cut at the page size, and only
/// those few rows are merged: one `status IN (…)` lookup would read every matching task to sort
/// them (all of an agent's finished tasks, for a filter that includes `completed`).
pub(super) fn list_query(prefix: &str, filter: &TaskFilter) -> ListQuery {
    let page = i64::from(filter.limit) + 1;
    let mut query = ListQuery {
        sql: prefix.to_owned(),
        binds: Vec::new(),
    };
    if filter.statuses.is_empty() {
        push_branch(&mut query, filter, None, page);
        return query;
    }
    for (n, status) in filter.statuses.iter().enumerate() {
        if n > 0 {
            query.push(" UNION ALL ");
        }
        query.push("SELECT * FROM (");
        push_branch(&mut query, filter, Some(*status), page);
        query.push(")");
    }
    query.push(" ORDER BY queue_seq DESC");
    query.bind(limit_param!(), Bind::Int(page));
    query
}

/// One newest-first page of the filter's tasks, in one state when `status` is given. The page
/// is one row longer than asked: the extra row tells whether another page exists without a
/// second COUNT query.
fn push_branch(query: &mut ListQuery, filter: &TaskFilter, status: Option<TaskStatus>, page: i64) {
    query.push(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE 1 = 1"
    ));
    if let Some(agent) = &filter.agent_id {
        query.bind(" AND agent_id = ?", Bind::Text(agent.as_str().to_owned()));
    }
    if let Some(status) = status {
        query.bind(" AND status = ?", Bind::Text(status.as_str().to_owned()));
    }
    if let Some(before) = filter.before_seq {
        query.bind(" AND queue_seq < ?", Bind::Int(before));
    }
    query.push(" ORDER BY queue_seq DESC");
    query.bind(limit_param!(), Bind::Int(page));
}

/// See [`crate::TaskStore::list_tasks`].
pub(super) async fn list(read: &SqlitePool, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
    // Nothing to read; and no cursor either, or a paging client would loop forever.
    if filter.limit == 0 {
        return Ok(page_of(Vec::new(), filter));
    }
    let query = list_query("", filter);
    let rows = query.sqlx().fetch_all(read).await?;
    let tasks = rows
        .iter()
        .map(task_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page_of(tasks, filter))
}

/// [`list`] on the calling thread.
pub(super) fn list_inline(
    conn: &rusqlite::Connection,
    filter: &TaskFilter,
) -> Result<TaskPage, Miss> {
    if filter.limit == 0 {
        return Ok(page_of(Vec::new(), filter));
    }
    let query = list_query("", filter);
    let mut stmt = conn.prepare_cached(&query.sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(&query.binds))?;
    let mut tasks = Vec::new();
    while let Some(row) = rows.next()? {
        tasks.push(task_from_row(&Named::new(row, &TASK_COLUMNS))?);
    }
    Ok(page_of(tasks, filter))
}

/// The page the filter asked for out of `tasks` (up to one more than asked, newest first).
fn page_of(mut tasks: Vec<Task>, filter: &TaskFilter) -> TaskPage {
    let more = tasks.len() > filter.limit as usize;
    tasks.truncate(filter.limit as usize);
    let next_before_seq = if more {
        tasks.last().map(|t| t.queue_seq)
    } else {
        None
    };
    TaskPage {
        tasks,
        next_before_seq,
    }
}
