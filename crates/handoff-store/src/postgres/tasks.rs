//! Task rows: submission, claiming, state changes, listing and purging. Functions taking a
//! `PgConnection` run inside the caller's write transaction; those taking a pool only read.

use handoff_task::{AgentId, NewTask, Task, TaskId, TaskStatus};
use serde_json::json;
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};

use super::events::{append, status_event};
use super::{query, query_as, query_scalar};
use crate::repeats::{self, ACTIVE_TWINS};
use crate::rows::{options_json, status, task_columns, task_from_row, to_u64};
use crate::{
    ClaimLimits, IdempotencyClaim, InsertOutcome, LeaseGrant, StatusChange, StoreError, TaskFilter,
    TaskPage,
};

/// Appends ` IN (?, ?, …)` binding each status; callers must pass at least one.
fn push_in(qb: &mut QueryBuilder<Postgres>, statuses: &[TaskStatus]) {
    qb.push(" IN (");
    let mut list = qb.separated(", ");
    for s in statuses {
        list.push_bind(s.as_str());
    }
    list.push_unseparated(")");
}

async fn fetch_task(conn: &mut PgConnection, id: &str) -> Result<Option<Task>, StoreError> {
    let row = query(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE id = ?"
    ))
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(task_from_row).transpose()
}

async fn count_in(conn: &mut PgConnection, statuses: &[TaskStatus]) -> Result<i64, StoreError> {
    let mut qb = QueryBuilder::<Postgres>::new("SELECT COUNT(*) FROM tasks WHERE status");
    push_in(&mut qb, statuses);
    Ok(qb.build_query_scalar().fetch_one(&mut *conn).await?)
}

/// Whether the backlog is within `sessions` submissions of `max_queued` (so submissions must be
/// counted one at a time to keep the cap exact; see [`super::locks`]).
pub(super) async fn near_cap(
    conn: &mut PgConnection,
    max_queued: u32,
    sessions: i64,
) -> Result<bool, StoreError> {
    let queued = count_in(conn, &[TaskStatus::Queued]).await?;
    Ok(queued.saturating_add(sessions) >= i64::from(max_queued))
}

/// See [`crate::TaskStore::find_idempotent`].
pub(super) async fn find_idempotent(
    conn: &mut PgConnection,
    agent: &AgentId,
    claim: &IdempotencyClaim,
) -> Result<Option<Task>, StoreError> {
    let existing: Option<String> = query_scalar(
        "SELECT task_id FROM idempotency_keys \
         WHERE agent_id = ? AND key = ? AND created_at >= ?",
    )
    .bind(agent.as_str())
    .bind(claim.key.as_str())
    .bind(claim.not_before)
    .fetch_optional(&mut *conn)
    .await?;
    match existing {
        Some(id) => fetch_task(conn, &id).await,
        None => Ok(None),
    }
}

/// See [`crate::TaskStore::find_repeated`].
pub(super) async fn find_repeated(
    conn: &mut PgConnection,
    task: &NewTask,
) -> Result<Option<Vec<TaskId>>, StoreError> {
    let Some(guard) = &task.repeat_guard else {
        return Ok(None);
    };
    let twins: Vec<String> = query_scalar(&ACTIVE_TWINS)
        .bind(task.agent_id.as_str())
        .bind(guard.key.as_str())
        .bind(task.created_at.saturating_sub(guard.window_ms))
        .fetch_all(&mut *conn)
        .await?;
    repeats::judge(guard, &twins)
}

/// See [`crate::TaskStore::insert_task`]. Check order matters: a duplicate submission is answered
/// even when the queue is full, and a refused one writes nothing (no key captured).
pub(super) async fn insert(
    conn: &mut PgConnection,
    task: &NewTask,
    idempotency: Option<&IdempotencyClaim>,
    max_queued: u32,
) -> Result<InsertOutcome, StoreError> {
    if let Some(claim) = idempotency
        && let Some(found) = find_idempotent(conn, &task.agent_id, claim).await?
    {
        return Ok(InsertOutcome::Existing(found));
    }
    if let Some(active) = find_repeated(conn, task).await? {
        return Ok(InsertOutcome::Repeated { active });
    }

    let queued = to_u64(count_in(conn, &[TaskStatus::Queued]).await?);
    if queued >= u64::from(max_queued) {
        return Ok(InsertOutcome::QueueFull { queued });
    }

    let row = query(concat!(
        "INSERT INTO tasks (id, agent_id, description, executor, options, status, priority, \
         workdir, created_at, idempotency_key, metadata, call_key) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ",
        task_columns!()
    ))
    .bind(task.id.as_str())
    .bind(task.agent_id.as_str())
    .bind(task.description.as_str())
    .bind(task.executor.as_str())
    .bind(options_json(&task.options)?)
    .bind(TaskStatus::Queued.as_str())
    .bind(task.priority)
    .bind(task.workdir.as_str())
    .bind(task.created_at)
    .bind(task.idempotency_key.as_deref())
    .bind(task.metadata.to_string())
    .bind(task.repeat_guard.as_ref().map(|g| g.key.as_str()))
    .fetch_one(&mut *conn)
    .await?;
    let created = task_from_row(&row)?;

    if let Some(claim) = idempotency {
        // Replaces an expired key of this agent; an unexpired one returned above.
        query(
            "INSERT INTO idempotency_keys (agent_id, key, task_id, created_at) \
             VALUES (?, ?, ?, ?) \
             ON CONFLICT (agent_id, key) DO UPDATE SET task_id = excluded.task_id, \
             created_at = excluded.created_at",
        )
        .bind(task.agent_id.as_str())
        .bind(claim.key.as_str())
        .bind(task.id.as_str())
        .bind(task.created_at)
        .execute(&mut *conn)
        .await?;
    }

    let queued = TaskStatus::Queued.as_str();
    append(
        conn,
        &created.id,
        task.created_at,
        &[status_event(queued, json!({ "to": queued }))],
    )
    .await?;
    Ok(InsertOutcome::Created(created))
}

/// See [`crate::TaskStore::claim`].
pub(super) async fn claim(
    conn: &mut PgConnection,
    limits: ClaimLimits,
    at: i64,
    lease: Option<&LeaseGrant>,
) -> Result<Option<Task>, StoreError> {
    let active = count_in(conn, &TaskStatus::ACTIVE).await?;
    if active >= i64::from(limits.max_active) {
        return Ok(None);
    }

    // Active tasks are few (bounded by max_active), so counting them per agent is cheap; the
    // queued scan walks the (status, priority DESC, queue_seq) index in claim order.
    let mut qb = QueryBuilder::<Postgres>::new(
        "SELECT t.id FROM tasks t LEFT JOIN \
         (SELECT agent_id, COUNT(*) AS n FROM tasks WHERE status",
    );
    push_in(&mut qb, &TaskStatus::ACTIVE);
    qb.push(" GROUP BY agent_id) a ON a.agent_id = t.agent_id WHERE t.status = ")
        .push_bind(TaskStatus::Queued.as_str())
        .push(" AND COALESCE(a.n, 0) < ")
        .push_bind(i64::from(limits.max_active_per_agent))
        .push(" ORDER BY t.priority DESC, t.queue_seq LIMIT 1 FOR UPDATE OF t SKIP LOCKED");
    let picked: Option<String> = qb.build_query_scalar().fetch_optional(&mut *conn).await?;
    let Some(picked) = picked else {
        return Ok(None);
    };
    // Its events are numbered under its own lock (claims, then the task).
    super::locks::lock(conn, super::locks::Scope::Task(&picked)).await?;

    let row = query(concat!(
        "UPDATE tasks SET status = ?, started_at = COALESCE(started_at, ?), owner = ?, \
         ran_on = COALESCE(?, ran_on), lease_until = ?, fence = fence + 1 \
         WHERE id = ? AND status = ? RETURNING ",
        task_columns!()
    ))
    .bind(TaskStatus::Running.as_str())
    .bind(at)
    .bind(lease.map(|l| l.owner.as_str()))
    .bind(lease.map(|l| l.owner.as_str()))
    .bind(lease.map(|l| l.until))
    .bind(picked.as_str())
    .bind(TaskStatus::Queued.as_str())
    .fetch_one(&mut *conn)
    .await?;
    let task = task_from_row(&row)?;

    let (from, to) = (TaskStatus::Queued.as_str(), TaskStatus::Running.as_str());
    append(
        conn,
        &task.id,
        at,
        &[status_event(to, json!({ "from": from, "to": to }))],
    )
    .await?;
    Ok(Some(task))
}

/// See [`crate::TaskStore::set_status`].
pub(super) async fn set_status(
    conn: &mut PgConnection,
    id: &TaskId,
    change: &StatusChange,
) -> Result<Option<Task>, StoreError> {
    // The engine checks too; refusing here keeps a buggy caller from reviving a finished task.
    if !change.from.can_become(change.to) {
        return Ok(None);
    }
    let started_at = (change.to == TaskStatus::Running).then_some(change.at);
    let completed_at = change.to.is_terminal().then_some(change.at);
    let row = query(concat!(
        "UPDATE tasks SET status = ?, started_at = COALESCE(started_at, ?), \
         completed_at = COALESCE(?, completed_at), \
         exit_code = CASE WHEN ? THEN ? ELSE exit_code END, \
         exit_signal = CASE WHEN ? THEN ? ELSE exit_signal END, \
         error = COALESCE(?, error), \
         owner = CASE WHEN ? THEN NULL ELSE owner END, \
         lease_until = CASE WHEN ? THEN NULL ELSE lease_until END \
         WHERE id = ? AND status = ? RETURNING ",
        task_columns!()
    ))
    .bind(change.to.as_str())
    .bind(started_at)
    .bind(completed_at)
    .bind(change.exit.is_some())
    .bind(change.exit.and_then(|e| e.code))
    .bind(change.exit.is_some())
    .bind(change.exit.and_then(|e| e.signal))
    .bind(change.error.as_deref())
    // A finished task is nobody's: its lease ends with it.
    .bind(change.to.is_terminal())
    .bind(change.to.is_terminal())
    .bind(id.as_str())
    .bind(change.from.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let task = task_from_row(&row)?;
    if change.to.is_terminal() {
        // A finished task has nobody left to answer.
        super::inputs::clear(conn, id).await?;
    }

    let mut data = json!({ "from": change.from.as_str(), "to": change.to.as_str() });
    if let Some(error) = &change.error {
        data["error"] = json!(error);
    }
    append(
        conn,
        id,
        change.at,
        &[status_event(change.reason.as_str(), data)],
    )
    .await?;
    Ok(Some(task))
}

/// See [`crate::TaskStore::requeue`].
pub(super) async fn requeue(
    conn: &mut PgConnection,
    id: &TaskId,
    from: TaskStatus,
    at: i64,
    reason: &str,
) -> Result<Option<Task>, StoreError> {
    if !from.is_active() {
        return Ok(None);
    }
    let row = query(concat!(
        "UPDATE tasks SET status = 'queued', started_at = NULL, runner_state = NULL, \
         owner = NULL, lease_until = NULL, fence = fence + 1 \
         WHERE id = ? AND status = ? RETURNING ",
        task_columns!()
    ))
    .bind(id.as_str())
    .bind(from.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let task = task_from_row(&row)?;
    // The run that asked is gone; a re-run asks again.
    super::inputs::clear(conn, id).await?;
    let data = json!({ "from": from.as_str(), "to": "queued" });
    append(conn, id, at, &[status_event(reason, data)]).await?;
    Ok(Some(task))
}

/// See [`crate::TaskStore::purge_terminal`]. Events, artifacts and idempotency keys go with their
/// task through `ON DELETE CASCADE`.
pub(super) async fn purge(
    conn: &mut PgConnection,
    before: i64,
    limit: u32,
) -> Result<Vec<Task>, StoreError> {
    let terminal: Vec<TaskStatus> = TaskStatus::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .collect();
    let mut qb = QueryBuilder::<Postgres>::new(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE status"
    ));
    push_in(&mut qb, &terminal);
    qb.push(" AND completed_at < ")
        .push_bind(before)
        .push(" ORDER BY completed_at, queue_seq LIMIT ")
        .push_bind(i64::from(limit));
    let rows = qb.build().fetch_all(&mut *conn).await?;
    let tasks = rows
        .iter()
        .map(task_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    for task in &tasks {
        query("DELETE FROM tasks WHERE id = ?")
            .bind(task.id.as_str())
            .execute(&mut *conn)
            .await?;
    }
    Ok(tasks)
}

/// One task by id.
pub(super) async fn get(read: &PgPool, id: &TaskId) -> Result<Option<Task>, StoreError> {
    let mut conn = read.acquire().await?;
    fetch_task(&mut conn, id.as_str()).await
}

/// The `list_tasks` query after `prefix` (`EXPLAIN QUERY PLAN ` in the index test). Each asked
/// state is its own newest-first walk of `tasks_agent_status`, cut at the page size, and only
/// those few rows are merged: one `status IN (…)` lookup would read every matching task to sort
/// them (all of an agent's finished tasks, for a filter that includes `completed`).
pub(super) fn list_query(prefix: &str, filter: &TaskFilter) -> QueryBuilder<Postgres> {
    let page = i64::from(filter.limit) + 1;
    let mut qb = QueryBuilder::<Postgres>::new(prefix);
    if filter.statuses.is_empty() {
        push_list_branch(&mut qb, filter, None, page);
        return qb;
    }
    for (n, status) in filter.statuses.iter().enumerate() {
        if n > 0 {
            qb.push(" UNION ALL ");
        }
        qb.push("SELECT * FROM (");
        push_list_branch(&mut qb, filter, Some(*status), page);
        // PostgreSQL requires every subquery in FROM to be named.
        qb.push(format!(") AS branch{n}"));
    }
    qb.push(" ORDER BY queue_seq DESC LIMIT ").push_bind(page);
    qb
}

/// One newest-first page of the filter's tasks, in one state when `status` is given. The page
/// is one row longer than asked: the extra row tells whether another page exists without a
/// second COUNT query.
fn push_list_branch(
    qb: &mut QueryBuilder<Postgres>,
    filter: &TaskFilter,
    status: Option<TaskStatus>,
    page: i64,
) {
    qb.push(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE 1 = 1"
    ));
    if let Some(agent) = &filter.agent_id {
        qb.push(" AND agent_id = ")
            .push_bind(agent.as_str().to_owned());
    }
    if let Some(status) = status {
        qb.push(" AND status = ").push_bind(status.as_str());
    }
    if let Some(before) = filter.before_seq {
        qb.push(" AND queue_seq < ").push_bind(before);
    }
    qb.push(" ORDER BY queue_seq DESC LIMIT ").push_bind(page);
}

/// See [`crate::TaskStore::list_tasks`].
pub(super) async fn list(read: &PgPool, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
    // A zero-size page with a cursor would make a paging client loop forever.
    if filter.limit == 0 {
        return Ok(TaskPage {
            tasks: Vec::new(),
            next_before_seq: None,
        });
    }
    let rows = list_query("", filter).build().fetch_all(read).await?;
    let mut tasks = rows
        .iter()
        .map(task_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    let more = tasks.len() > filter.limit as usize;
    tasks.truncate(filter.limit as usize);
    let next_before_seq = if more {
        tasks.last().map(|t| t.queue_seq)
    } else {
        None
    };
    Ok(TaskPage {
        tasks,
        next_before_seq,
    })
}

/// See [`crate::TaskStore::count_by_status`].
pub(super) async fn count_by_status(read: &PgPool) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
    let rows: Vec<(String, i64)> = query_as("SELECT status, COUNT(*) FROM tasks GROUP BY status")
        .fetch_all(read)
        .await?;
    let mut counts = rows
        .into_iter()
        .map(|(name, n)| Ok((status("tasks", &name)?, to_u64(n))))
        .collect::<Result<Vec<_>, StoreError>>()?;
    counts.sort_unstable_by_key(|(s, _)| *s);
    Ok(counts)
}

/// See [`crate::TaskStore::queue_position`].
pub(super) async fn queue_position(read: &PgPool, id: &TaskId) -> Result<Option<u64>, StoreError> {
    // One snapshot, so the task cannot be claimed between the two queries.
    let mut tx = read.begin().await?;
    let own: Option<(String, i64, i64)> =
        query_as("SELECT status, priority, queue_seq FROM tasks WHERE id = ?")
            .bind(id.as_str())
            .fetch_optional(&mut *tx)
            .await?;
    let Some((own_status, priority, queue_seq)) = own else {
        return Ok(None);
    };
    if status("tasks", &own_status)? != TaskStatus::Queued {
        return Ok(None);
    }
    let ahead: i64 = query_scalar(
        "SELECT COUNT(*) FROM tasks WHERE status = ? \
         AND (priority > ? OR (priority = ? AND queue_seq < ?))",
    )
    .bind(TaskStatus::Queued.as_str())
    .bind(priority)
    .bind(priority)
    .bind(queue_seq)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(to_u64(ahead) + 1))
}

/// See [`crate::TaskStore::tasks_in`].
pub(super) async fn tasks_in(
    read: &PgPool,
    statuses: &[TaskStatus],
) -> Result<Vec<Task>, StoreError> {
    if statuses.is_empty() {
        return Ok(Vec::new());
    }
    let mut qb = QueryBuilder::<Postgres>::new(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE status"
    ));
    push_in(&mut qb, statuses);
    qb.push(" ORDER BY queue_seq");
    let rows = qb.build().fetch_all(read).await?;
    rows.iter().map(task_from_row).collect()
}
