//! Task rows: submission, claiming, state changes and purging. Functions that write run inside
//! the caller's write transaction; the reads run on any connection.

use handoff_task::{AgentId, NewTask, Task, TaskId, TaskStatus};
use serde_json::json;

use super::events::{append, status_event};
use super::limit_param;
use crate::repeats::{self, ACTIVE_TWINS};
use crate::rows::{StoredRow, options_json, status, task_columns, task_from_row, to_u64};
use crate::sql::{Conn, Sql};
use crate::{
    ClaimLimits, IdempotencyClaim, InsertOutcome, LeaseGrant, Reopen, StatusChange, StoreError,
};

const TASKS: &str = "tasks";

/// One task row by id; read through sqlx and inline alike.
pub(crate) const TASK_BY_ID: &str = concat!("SELECT ", task_columns!(), " FROM tasks WHERE id = ?");

/// The names of `statuses`, for [`Sql::push_in`].
fn names(statuses: &[TaskStatus]) -> impl Iterator<Item = &'static str> + '_ {
    statuses.iter().map(|s| s.as_str())
}

/// One task by id.
pub(crate) async fn get<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
) -> Result<Option<Task>, StoreError> {
    let row = Sql::new(TASK_BY_ID)
        .bind(id.as_str())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(task_from_row).transpose()
}

/// How many tasks are in one of `statuses`.
pub(crate) async fn count_in<C: Conn + ?Sized>(
    conn: &mut C,
    statuses: &[TaskStatus],
) -> Result<i64, StoreError> {
    let mut sql = Sql::new("SELECT COUNT(*) AS n FROM tasks WHERE status");
    sql.push_in(names(statuses));
    sql.fetch_one(conn).await?.int(TASKS, "n")
}

/// See [`crate::TaskStore::find_idempotent`].
pub(crate) async fn find_idempotent<C: Conn + ?Sized>(
    conn: &mut C,
    agent: &AgentId,
    claim: &IdempotencyClaim,
) -> Result<Option<Task>, StoreError> {
    let existing = Sql::new(
        "SELECT task_id FROM idempotency_keys \
         WHERE agent_id = ? AND key = ? AND created_at >= ?",
    )
    .bind(agent.as_str())
    .bind(claim.key.as_str())
    .bind(claim.not_before)
    .fetch_optional(conn)
    .await?;
    match existing {
        Some(row) => {
            let id = crate::rows::task_id(TASKS, &row.text("idempotency_keys", "task_id")?)?;
            get(conn, &id).await
        }
        None => Ok(None),
    }
}

/// See [`crate::TaskStore::find_repeated`].
pub(crate) async fn find_repeated<C: Conn + ?Sized>(
    conn: &mut C,
    task: &NewTask,
) -> Result<Option<Vec<TaskId>>, StoreError> {
    let Some(guard) = &task.repeat_guard else {
        return Ok(None);
    };
    let rows = Sql::new(&ACTIVE_TWINS)
        .bind(task.agent_id.as_str())
        .bind(guard.key.as_str())
        .bind(task.created_at.saturating_sub(guard.window_ms))
        .fetch_all(conn)
        .await?;
    let twins = rows
        .iter()
        .map(|row| row.text(TASKS, "id"))
        .collect::<Result<Vec<_>, _>>()?;
    repeats::judge(guard, &twins)
}

/// See [`crate::TaskStore::insert_task`]. Check order matters: a duplicate submission is answered
/// even when the queue is full, and a refused one writes nothing (no key captured).
pub(crate) async fn insert<C: Conn + ?Sized>(
    conn: &mut C,
    task: &NewTask,
    idempotency: Option<&IdempotencyClaim>,
    max_queued: u32,
    counted: Option<i64>,
) -> Result<InsertOutcome, StoreError> {
    if let Some(claim) = idempotency
        && let Some(found) = find_idempotent(conn, &task.agent_id, claim).await?
    {
        return Ok(InsertOutcome::Existing(found));
    }
    if let Some(active) = find_repeated(conn, task).await? {
        return Ok(InsertOutcome::Repeated { active });
    }

    // `counted`: the queued tasks the backend counted under this submission's locks.
    let queued = match counted {
        Some(queued) => queued,
        None => count_in(conn, &[TaskStatus::Queued]).await?,
    };
    let queued = to_u64(queued);
    if queued >= u64::from(max_queued) {
        return Ok(InsertOutcome::QueueFull { queued });
    }

    let row = Sql::new(concat!(
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
    .fetch_one(conn)
    .await?;
    let created = task_from_row(&row)?;

    if let Some(claim) = idempotency {
        // Replaces an expired key of this agent; an unexpired one returned above.
        Sql::new(
            "INSERT INTO idempotency_keys (agent_id, key, task_id, created_at) \
             VALUES (?, ?, ?, ?) \
             ON CONFLICT (agent_id, key) DO UPDATE SET task_id = excluded.task_id, \
             created_at = excluded.created_at",
        )
        .bind(task.agent_id.as_str())
        .bind(claim.key.as_str())
        .bind(task.id.as_str())
        .bind(task.created_at)
        .execute(conn)
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

/// The id of the next queued task a claim within `limits` takes, if any: none while the active
/// tasks fill `max_active` (counted in the same statement, one round trip under the claims
/// lock).
async fn pick<C: Conn + ?Sized>(
    conn: &mut C,
    limits: ClaimLimits,
) -> Result<Option<String>, StoreError> {
    // Active tasks are few (bounded by max_active), so counting them per agent is cheap; the
    // queued scan walks the (status, priority DESC, queue_seq) index in claim order.
    let mut sql = Sql::new(
        "SELECT t.id FROM tasks t LEFT JOIN \
         (SELECT agent_id, COUNT(*) AS n FROM tasks WHERE status",
    );
    sql.push_in(names(&TaskStatus::ACTIVE))
        .push_bind(
            " GROUP BY agent_id) a ON a.agent_id = t.agent_id WHERE t.status = ?",
            TaskStatus::Queued.as_str(),
        )
        .push_bind(
            " AND COALESCE(a.n, 0) < ?",
            i64::from(limits.max_active_per_agent),
        )
        .push(" AND (SELECT COUNT(*) FROM tasks WHERE status");
    sql.push_in(names(&TaskStatus::ACTIVE))
        .push_bind(") < ?", i64::from(limits.max_active))
        .push(" ORDER BY t.priority DESC, t.queue_seq LIMIT 1")
        .push(C::CLAIM_PICK);
    let row = sql.fetch_optional(conn).await?;
    row.map(|row| row.text(TASKS, "id")).transpose()
}

/// See [`crate::TaskStore::claim`].
pub(crate) async fn claim<C: Conn + ?Sized>(
    conn: &mut C,
    limits: ClaimLimits,
    at: i64,
    lease: Option<&LeaseGrant>,
) -> Result<Option<Task>, StoreError> {
    let Some(picked) = pick(conn, limits).await? else {
        return Ok(None);
    };
    conn.hold_claimed(&picked).await?;

    let row = Sql::new(concat!(
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
    .fetch_one(conn)
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
pub(crate) async fn set_status<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
    change: &StatusChange,
) -> Result<Option<Task>, StoreError> {
    // The engine checks too; refusing here keeps a buggy caller from reviving a finished task.
    if !change.from.can_become(change.to) {
        return Ok(None);
    }
    let started_at = (change.to == TaskStatus::Running).then_some(change.at);
    let completed_at = change.to.is_terminal().then_some(change.at);
    let row = Sql::new(concat!(
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
    .fetch_optional(conn)
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
pub(crate) async fn requeue<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
    from: TaskStatus,
    at: i64,
    reason: &str,
) -> Result<Option<Task>, StoreError> {
    if !from.is_active() {
        return Ok(None);
    }
    let row = Sql::new(concat!(
        "UPDATE tasks SET status = 'queued', started_at = NULL, runner_state = NULL, \
         owner = NULL, lease_until = NULL, fence = fence + 1 \
         WHERE id = ? AND status = ? RETURNING ",
        task_columns!()
    ))
    .bind(id.as_str())
    .bind(from.as_str())
    .fetch_optional(conn)
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

/// See [`crate::TaskStore::reopen`].
pub(crate) async fn reopen<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
    reopen: &Reopen,
) -> Result<Option<Task>, StoreError> {
    if !reopen.from.is_terminal() {
        return Ok(None);
    }
    let row = Sql::new(concat!(
        "UPDATE tasks SET status = 'queued', options = ?, started_at = NULL, \
         completed_at = NULL, exit_code = NULL, exit_signal = NULL, error = NULL, \
         runner_state = NULL, result_delivered_at = NULL, owner = NULL, lease_until = NULL, \
         fence = fence + 1 WHERE id = ? AND status = ? RETURNING ",
        task_columns!()
    ))
    .bind(options_json(&reopen.options)?)
    .bind(id.as_str())
    .bind(reopen.from.as_str())
    .fetch_optional(conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let task = task_from_row(&row)?;
    let data = json!({
        "from": reopen.from.as_str(),
        "to": "queued",
        "round": reopen.options.round,
    });
    let mut events = vec![status_event(reopen.reason.as_str(), data)];
    events.extend(reopen.events.iter().cloned());
    append(conn, id, reopen.at, &events).await?;
    Ok(Some(task))
}

/// See [`crate::TaskStore::purge_terminal`]. Events, artifacts and idempotency keys go with their
/// task through `ON DELETE CASCADE`.
pub(crate) async fn purge<C: Conn + ?Sized>(
    conn: &mut C,
    before: i64,
    limit: u32,
) -> Result<Vec<Task>, StoreError> {
    let terminal: Vec<TaskStatus> = TaskStatus::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .collect();
    let mut sql = Sql::new(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE status"
    ));
    sql.push_in(names(&terminal))
        .push_bind(" AND completed_at < ?", before)
        .push(" ORDER BY completed_at, queue_seq")
        .push_bind(limit_param!(), i64::from(limit));
    let rows = sql.fetch_all(conn).await?;
    let tasks = rows
        .iter()
        .map(task_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    for task in &tasks {
        Sql::new("DELETE FROM tasks WHERE id = ?")
            .bind(task.id.as_str())
            .execute(conn)
            .await?;
    }
    Ok(tasks)
}

/// See [`crate::TaskStore::count_by_status`].
pub(crate) async fn count_by_status<C: Conn + ?Sized>(
    conn: &mut C,
) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
    let rows = Sql::new("SELECT status, COUNT(*) AS n FROM tasks GROUP BY status")
        .fetch_all(conn)
        .await?;
    let mut counts = rows
        .iter()
        .map(|row| {
            let name = row.text(TASKS, "status")?;
            Ok((status(TASKS, &name)?, to_u64(row.int(TASKS, "n")?)))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    counts.sort_unstable_by_key(|(s, _)| *s);
    Ok(counts)
}

/// See [`crate::TaskStore::queue_position`]; `conn` reads one snapshot, so the task cannot be
/// claimed between the two queries.
pub(crate) async fn queue_position<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
) -> Result<Option<u64>, StoreError> {
    let own = Sql::new("SELECT status, priority, queue_seq FROM tasks WHERE id = ?")
        .bind(id.as_str())
        .fetch_optional(conn)
        .await?;
    let Some(own) = own else {
        return Ok(None);
    };
    if status(TASKS, &own.text(TASKS, "status")?)? != TaskStatus::Queued {
        return Ok(None);
    }
    let (priority, queue_seq) = (own.int(TASKS, "priority")?, own.int(TASKS, "queue_seq")?);
    let ahead = Sql::new(
        "SELECT COUNT(*) AS n FROM tasks WHERE status = ? \
         AND (priority > ? OR (priority = ? AND queue_seq < ?))",
    )
    .bind(TaskStatus::Queued.as_str())
    .bind(priority)
    .bind(priority)
    .bind(queue_seq)
    .fetch_one(conn)
    .await?
    .int(TASKS, "n")?;
    Ok(Some(to_u64(ahead) + 1))
}

/// See [`crate::TaskStore::tasks_in`].
pub(crate) async fn tasks_in<C: Conn + ?Sized>(
    conn: &mut C,
    statuses: &[TaskStatus],
) -> Result<Vec<Task>, StoreError> {
    if statuses.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(concat!(
        "SELECT ",
        task_columns!(),
        " FROM tasks WHERE status"
    ));
    sql.push_in(names(statuses)).push(" ORDER BY queue_seq");
    let rows = sql.fetch_all(conn).await?;
    rows.iter().map(task_from_row).collect()
}
