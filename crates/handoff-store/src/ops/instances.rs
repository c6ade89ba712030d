//! Instances, their heartbeats, leases and shared rates ([`crate::InstanceStore`]), and the
//! loop guard's call history.

use handoff_task::{Task, TaskId};

use crate::instances::{self, record_from_row, summary_from_row};
use crate::repeats;
use crate::rows::{StoredRow, task_from_row};
use crate::sql::{Conn, Sql};
use crate::{InstanceRecord, InstanceSummary, LeaseGrant, StoreError};

/// Registers (or re-registers) an instance.
pub(crate) async fn register<C: Conn + ?Sized>(
    conn: &mut C,
    record: &InstanceRecord,
) -> Result<(), StoreError> {
    Sql::new(instances::REGISTER)
        .bind(record.id.as_str())
        .bind(record.host.as_str())
        .bind(i64::from(record.pid))
        .bind(record.started)
        .bind(record.heartbeat)
        .bind(record.draining)
        .execute(conn)
        .await?;
    Ok(())
}

/// Records a heartbeat and renews the instance's leases, in the caller's transaction: how
/// many, or `None` when the instance is no longer registered (nothing written then).
pub(crate) async fn heartbeat<C: Conn + ?Sized>(
    conn: &mut C,
    id: &str,
    at: i64,
    lease_until: i64,
) -> Result<Option<u64>, StoreError> {
    let beat = Sql::new(instances::BEAT)
        .bind(at)
        .bind(id)
        .execute(conn)
        .await?;
    if beat == 0 {
        return Ok(None);
    }
    let renewed = Sql::new(&instances::renew())
        .bind(lease_until)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(Some(renewed))
}

/// Marks an instance draining.
pub(crate) async fn drain<C: Conn + ?Sized>(conn: &mut C, id: &str) -> Result<(), StoreError> {
    Sql::new(instances::DRAIN)
        .bind(true)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Removes an instance.
pub(crate) async fn deregister<C: Conn + ?Sized>(conn: &mut C, id: &str) -> Result<(), StoreError> {
    Sql::new(instances::DEREGISTER)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// See [`crate::InstanceStore::expire_instances`].
pub(crate) async fn expire<C: Conn + ?Sized>(
    conn: &mut C,
    before: i64,
    caller: &str,
) -> Result<Vec<InstanceRecord>, StoreError> {
    let rows = Sql::new(instances::EXPIRE)
        .bind(before)
        .bind(caller)
        .fetch_all(conn)
        .await?;
    rows.iter().map(record_from_row).collect()
}

/// See [`crate::InstanceStore::take_over`]: the compare-and-set, one statement.
pub(crate) async fn take_over<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
    predecessor: &str,
    expired_before: i64,
    grant: &LeaseGrant,
) -> Result<Option<Task>, StoreError> {
    let row = Sql::new(&instances::take_over())
        .bind(grant.owner.as_str())
        .bind(grant.owner.as_str())
        .bind(grant.until)
        .bind(id.as_str())
        .bind(predecessor)
        .bind(expired_before)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(task_from_row).transpose()
}

/// See [`crate::InstanceStore::rescuer_lock`].
pub(crate) async fn rescuer_lock<C: Conn + ?Sized>(
    conn: &mut C,
    holder: &str,
    now: i64,
    until: i64,
) -> Result<bool, StoreError> {
    let held = Sql::new(instances::RESCUER)
        .bind(holder)
        .bind(until)
        .bind(now)
        .fetch_optional(conn)
        .await?;
    Ok(held.is_some())
}

/// See [`crate::InstanceStore::take_rate`].
pub(crate) async fn take_rate<C: Conn + ?Sized>(
    conn: &mut C,
    key: &str,
    interval_ms: i64,
    tolerance_ms: i64,
    now: i64,
) -> Result<Option<i64>, StoreError> {
    let taken = Sql::new(instances::RATE_TAKE)
        .bind(key)
        .bind(now.saturating_add(interval_ms))
        .bind(now)
        .bind(now)
        .bind(interval_ms)
        .bind(now)
        .bind(now)
        .bind(now)
        .bind(tolerance_ms)
        .fetch_optional(conn)
        .await?;
    if taken.is_some() {
        return Ok(None);
    }
    let tat = Sql::new(instances::RATE_TAT)
        .bind(key)
        .fetch_one(conn)
        .await?
        .int("rate_limits", "tat")?;
    Ok(Some(
        tat.saturating_sub(tolerance_ms).saturating_sub(now).max(1),
    ))
}

/// See [`crate::InstanceStore::record_call`], in the caller's transaction.
pub(crate) async fn record_call<C: Conn + ?Sized>(
    conn: &mut C,
    caller: &str,
    key: &str,
    (at, since, keep): (i64, i64, u32),
) -> Result<Vec<String>, StoreError> {
    Sql::new(repeats::CALLS_FORGET)
        .bind(since)
        .execute(conn)
        .await?;
    Sql::new(repeats::CALLS_RECORD)
        .bind(caller)
        .bind(at)
        .bind(key)
        .execute(conn)
        .await?;
    let rows = Sql::new(repeats::CALLS_LATEST)
        .bind(caller)
        .bind(i64::from(keep))
        .fetch_all(conn)
        .await?;
    let latest = rows
        .iter()
        .map(|row| {
            Ok((
                row.int("call_history", "seq")?,
                row.text("call_history", "key")?,
            ))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let (oldest, keys) = repeats::oldest_first(latest);
    if let Some(oldest) = oldest {
        Sql::new(repeats::CALLS_TRIM)
            .bind(caller)
            .bind(oldest)
            .execute(conn)
            .await?;
    }
    Ok(keys)
}

/// Every instance with the number of tasks it holds.
pub(crate) async fn list<C: Conn + ?Sized>(
    conn: &mut C,
) -> Result<Vec<InstanceSummary>, StoreError> {
    let rows = Sql::new(&instances::list()).fetch_all(conn).await?;
    rows.iter().map(summary_from_row).collect()
}
