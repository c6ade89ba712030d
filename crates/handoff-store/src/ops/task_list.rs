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
    // Both sides through the database's own lower(), so SQLite (ASCII) and PostgreSQL
    // (Unicode) each fold the text and the descriptions alike. No index helps a substring:
    // the walk stays the newest-first index order above, cut at the page size.
    if let Some(text) = &filter.text {
        sql.push_bind(
            " AND lower(description) LIKE lower(?) ESCAPE '\\'",
            contains_pattern(text),
        );
    }
    sql.push(" ORDER BY queue_seq DESC")
        .push_bind(limit_param!(), page);
}

/// A LIKE pattern matching `text` anywhere: its `%`, `_` and `\` escaped with `\`, so they
/// match themselves.
pub(crate) fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_their_wildcards() {
        assert_eq!(contains_pattern("fix"), "%fix%");
        assert_eq!(contains_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
        assert_eq!(contains_pattern(""), "%%");
    }

    #[test]
    fn a_text_filter_is_bound_never_spliced() {
        let filter = TaskFilter {
            limit: 10,
            text: Some("x' OR 1=1 --".to_owned()),
            ..TaskFilter::default()
        };
        let sql = list_query("", &filter);
        assert!(!sql.text().contains("OR 1=1"), "{}", sql.text());
        assert!(
            sql.text().contains("LIKE lower(?) ESCAPE '\\'"),
            "{}",
            sql.text()
        );
    }
}
