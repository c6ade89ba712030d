//! `list_tasks`: one newest-first page of tasks.

use handoff_task::{Task, TaskStatus};

use super::limit_param;
use crate::rows::{task_columns, task_from_row};
use crate::sql::{Conn, Sql};
use crate::{StoreError, TaskFilter, TaskPage};

/// The `list_tasks` query after `prefix` (`EXPLAIN QUERY PLAN ` in the index test). Each asked
/// state is its own newest-first walk of `tasks_agent_status`, cut at the page size, and only
/// those few rows are merged: one `status IN (…)` lookup would read every matching task to sort
/// them (all of an agent's finished tasks, for a filter that includes `completed`).
pub(crate) fn list_query(prefix: &str, filter: &TaskFilter) -> Sql {
    let page = i64::from(filter.limit) + 1;
    let mut sql = Sql::new(prefix);
    if filter.statuses.is_empty() {
        push_branch(&mut sql, filter, None, page);
        return sql;
    }
    for (n, status) in filter.statuses.iter().enumerate() {
        if n > 0 {
            sql.push(" UNION ALL ");
        }
        sql.push("SELECT * FROM (");
        push_branch(&mut sql, filter, Some(*status), page);
        // PostgreSQL requires every subquery in FROM to be named.
        sql.push(&format!(") AS branch{n}"));
    }
    sql.push(" ORDER BY queue_seq DESC")
        .push_bind(limit_param!(), page);
    sql
}

/// One newest-first page of the filter's tasks, in one state when `status` is given. The page
/// is one row longer than asked: the extra row tells whether another page exists without a
/// second COUNT query.
fn push_branch(sql: &mut Sql, filter: &TaskFilter, status: Option<TaskStatus>, page: i64) {
    sql.push(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE 1 = 1"
    ));
    if let Some(agent) = &filter.agent_id {
        sql.push_bind(" AND agent_id = ?", agent.as_str());
    }
    if let Some(status) = status {
        sql.push_bind(" AND status = ?", status.as_str());
    }
    if let Some(before) = filter.before_seq {
        sql.push_bind(" AND queue_seq < ?", before);
    }
    sql.push(" ORDER BY queue_seq DESC")
        .push_bind(limit_param!(), page);
}

/// See [`crate::TaskStore::list_tasks`].
pub(crate) async fn list<C: Conn + ?Sized>(
    conn: &mut C,
    filter: &TaskFilter,
) -> Result<TaskPage, StoreError> {
    // Nothing to read; and no cursor either, or a paging client would loop forever.
    if filter.limit == 0 {
        return Ok(page_of(Vec::new(), filter));
    }
    let rows = list_query("", filter).fetch_all(conn).await?;
    let tasks = rows
        .iter()
        .map(task_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page_of(tasks, filter))
}

/// The page the filter asked for out of `tasks` (up to one more than asked, newest first).
pub(crate) fn page_of(mut tasks: Vec<Task>, filter: &TaskFilter) -> TaskPage {
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
