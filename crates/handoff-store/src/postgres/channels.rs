//! Chat integrations' durable records: each task's channel, read positions, applied commands.

use handoff_task::TaskId;
use sqlx::{PgConnection, PgPool, Row, postgres::PgRow};

use super::{query, query_scalar};
use crate::{ChannelRecord, StoreError};

fn corrupt(e: impl ToString) -> StoreError {
    StoreError::Corrupt {
        table: "integration_channels",
        message: e.to_string(),
    }
}

macro_rules! select_channels {
    ($where:literal) => {
        concat!(
            "SELECT integration, task_id, channel_id, created_at, close_at, closed_at ",
            "FROM integration_channels WHERE ",
            $where
        )
    };
}

fn from_row(row: &PgRow) -> Result<ChannelRecord, StoreError> {
    let task: String = row.try_get("task_id")?;
    Ok(ChannelRecord {
        integration: row.try_get("integration")?,
        task_id: TaskId::parse(&task).map_err(corrupt)?,
        channel_id: row.try_get("channel_id")?,
        created_at: row.try_get("created_at")?,
        close_at: row.try_get("close_at")?,
        closed_at: row.try_get("closed_at")?,
    })
}

/// Inserts or replaces a task's channel record.
pub(super) async fn put(conn: &mut PgConnection, r: &ChannelRecord) -> Result<(), StoreError> {
    query(
        "INSERT INTO integration_channels (integration, task_id, channel_id, created_at, \
         close_at, closed_at) VALUES (?, ?, ?, ?, ?, ?) \
         ON CONFLICT (integration, task_id) DO UPDATE SET channel_id = excluded.channel_id, \
         created_at = excluded.created_at, close_at = excluded.close_at, \
         closed_at = excluded.closed_at",
    )
    .bind(&r.integration)
    .bind(r.task_id.as_str())
    .bind(&r.channel_id)
    .bind(r.created_at)
    .bind(r.close_at)
    .bind(r.closed_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// A task's channel.
pub(super) async fn get(
    read: &PgPool,
    integration: &str,
    task: &TaskId,
) -> Result<Option<ChannelRecord>, StoreError> {
    let row = query(select_channels!("integration = ? AND task_id = ?"))
        .bind(integration)
        .bind(task.as_str())
        .fetch_optional(read)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// A channel by its id.
pub(super) async fn by_id(
    read: &PgPool,
    integration: &str,
    channel: &str,
) -> Result<Option<ChannelRecord>, StoreError> {
    let row = query(select_channels!("integration = ? AND channel_id = ?"))
        .bind(integration)
        .bind(channel)
        .fetch_optional(read)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Channels not closed yet, oldest first.
pub(super) async fn open(
    read: &PgPool,
    integration: &str,
) -> Result<Vec<ChannelRecord>, StoreError> {
    let rows = query(select_channels!(
        "integration = ? AND closed_at IS NULL ORDER BY created_at, task_id"
    ))
    .bind(integration)
    .fetch_all(read)
    .await?;
    rows.iter().map(from_row).collect()
}

/// A stored position.
pub(super) async fn cursor(
    read: &PgPool,
    integration: &str,
    name: &str,
) -> Result<Option<String>, StoreError> {
    Ok(
        query_scalar("SELECT value FROM integration_cursors WHERE integration = ? AND name = ?")
            .bind(integration)
            .bind(name)
            .fetch_optional(read)
            .await?,
    )
}

/// Stores a position.
pub(super) async fn set_cursor(
    conn: &mut PgConnection,
    integration: &str,
    name: &str,
    value: &str,
) -> Result<(), StoreError> {
    query(
        "INSERT INTO integration_cursors (integration, name, value, updated_at) \
         VALUES (?, ?, ?, ?) ON CONFLICT (integration, name) DO UPDATE SET \
         value = excluded.value, updated_at = excluded.updated_at",
    )
    .bind(integration)
    .bind(name)
    .bind(value)
    .bind(handoff_task::unix_millis_now())
    .execute(conn)
    .await?;
    Ok(())
}

/// Records an applied command; false when it was recorded before.
pub(super) async fn mark_applied(
    conn: &mut PgConnection,
    integration: &str,
    key: &str,
    at: i64,
) -> Result<bool, StoreError> {
    let done = query(
        "INSERT INTO integration_applied (integration, key, applied_at) VALUES (?, ?, ?) \
         ON CONFLICT (integration, key) DO NOTHING",
    )
    .bind(integration)
    .bind(key)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
