//! The SQL of [`crate::InstanceStore`], shared by both stores (written with `?`; the PostgreSQL
//! store numbers the placeholders), and its row reader.

use handoff_task::TaskStatus;

use crate::{
    InstanceRecord, InstanceSummary, StoreError,
    rows::{StoredRow, corrupt},
};

const INSTANCES: &str = "instances";

/// Inserts or replaces an instance row.
pub(crate) const REGISTER: &str = "INSERT INTO instances (id, host, pid, started, heartbeat, \
     draining) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET host = excluded.host, \
     pid = excluded.pid, started = excluded.started, heartbeat = excluded.heartbeat, \
     draining = excluded.draining";

/// Records a heartbeat (0 rows: the instance is no longer registered).
pub(crate) const BEAT: &str = "UPDATE instances SET heartbeat = ? WHERE id = ?";

/// Marks an instance draining.
pub(crate) const DRAIN: &str = "UPDATE instances SET draining = ? WHERE id = ?";

/// Removes the instances silent since before `?` other than the caller (`?`), returning them.
pub(crate) const EXPIRE: &str = "DELETE FROM instances WHERE heartbeat < ? AND id <> ? \
     RETURNING id, host, pid, started, heartbeat, draining";

/// Takes or renews the rescuer's duty: binds `holder`, `until`, `now`; a row back when the
/// holder has it.
pub(crate) const RESCUER: &str = "INSERT INTO rescuer (id, holder, until) VALUES (1, ?, ?) \
     ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, until = excluded.until \
     WHERE rescuer.holder = excluded.holder OR rescuer.until < ? RETURNING holder";

/// Takes one request of a GCRA rate: binds `key`, `now + interval` (a first request), then
/// `now`, `now`, `interval` (the new arrival time), `now`, `now`, `now`, `tolerance` (the
/// condition); a row back when the request is within the rate.
pub(crate) const RATE_TAKE: &str = "INSERT INTO rate_limits (key, tat) VALUES (?, ?) \
     ON CONFLICT (key) DO UPDATE SET tat = \
     CASE WHEN rate_limits.tat > ? THEN rate_limits.tat ELSE ? END + ? \
     WHERE CASE WHEN rate_limits.tat > ? THEN rate_limits.tat ELSE ? END - ? <= ? RETURNING tat";

/// A rate key's theoretical arrival time: binds `key`.
pub(crate) const RATE_TAT: &str = "SELECT tat FROM rate_limits WHERE key = ?";

/// Removes an instance.
pub(crate) const DEREGISTER: &str = "DELETE FROM instances WHERE id = ?";

/// `'running', 'paused', ...`: the active states, for `status IN (...)`.
fn active_list() -> String {
    TaskStatus::ACTIVE
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Renews the leases of an instance's active tasks: binds `lease_until`, `owner`.
pub(crate) fn renew() -> String {
    format!(
        "UPDATE tasks SET lease_until = ? WHERE owner = ? AND status IN ({})",
        active_list()
    )
}

/// Moves an active task's lease from a dead predecessor to its successor: binds `owner`,
/// `ran_on`, `lease_until`, `id`, the predecessor, the time its lease must have run out before.
pub(crate) fn take_over() -> String {
    format!(
        concat!(
            "UPDATE tasks SET owner = ?, ran_on = ?, lease_until = ?, fence = fence + 1 \
             WHERE id = ? AND owner = ? AND COALESCE(lease_until, 0) < ? \
             AND status IN ({}) RETURNING ",
            crate::rows::task_columns!()
        ),
        active_list()
    )
}

/// Every instance with the number of active tasks it holds, oldest first.
pub(crate) fn list() -> String {
    format!(
        "SELECT i.id, i.host, i.pid, i.started, i.heartbeat, i.draining, \
         (SELECT COUNT(*) FROM tasks t WHERE t.owner = i.id AND t.status IN ({})) AS held \
         FROM instances i ORDER BY i.started, i.id",
        active_list()
    )
}

/// A row of [`EXPIRE`].
pub(crate) fn record_from_row(row: &impl StoredRow) -> Result<InstanceRecord, StoreError> {
    let pid = row.int(INSTANCES, "pid")?;
    Ok(InstanceRecord {
        id: row.text(INSTANCES, "id")?,
        host: row.text(INSTANCES, "host")?,
        pid: u32::try_from(pid).map_err(|_| corrupt(INSTANCES, "column `pid` out of range"))?,
        started: row.int(INSTANCES, "started")?,
        heartbeat: row.int(INSTANCES, "heartbeat")?,
        draining: row.flag(INSTANCES, "draining")?,
    })
}

/// A row of [`list`].
pub(crate) fn summary_from_row(row: &impl StoredRow) -> Result<InstanceSummary, StoreError> {
    let held = row.int(INSTANCES, "held")?;
    Ok(InstanceSummary {
        instance: record_from_row(row)?,
        tasks_held: u64::try_from(held)
            .map_err(|_| corrupt(INSTANCES, "column `held` out of range"))?,
    })
}
