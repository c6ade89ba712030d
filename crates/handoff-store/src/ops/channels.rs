//! Chat integrations' durable records: each task's channel, read positions, applied commands.

use crate::sql::{Conn, Sql};
use crate::{ChannelRecord, StoreError, rows::StoredRow};
use handoff_task::TaskId;

const CHANNELS: &str = "integration_channels";

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

fn from_row(row: &impl StoredRow) -> Result<ChannelRecord, StoreError> {
    let task = row.text(CHANNELS, "task_id")?;
    Ok(ChannelRecord {
        integration: row.text(CHANNELS, "integration")?,
        task_id: TaskId::parse(&task).map_err(corrupt)?,
        channel_id: row.text(CHANNELS, "channel_id")?,
        created_at: row.int(CHANNELS, "created_at")?,
        close_at: row.int_opt(CHANNELS, "close_at")?,
        closed_at: row.int_opt(CHANNELS, "closed_at")?,
    })
}

/// Inserts or replaces a task's channel record.
pub(crate) async fn put<C: Conn + ?Sized>(
    conn: &mut C,
    r: &ChannelRecord,
) -> Result<(), StoreError> {
    Sql::new(
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
pub(crate) async fn get<C: Conn + ?Sized>(
    conn: &mut C,
    integration: &str,
    task: &TaskId,
) -> Result<Option<ChannelRecord>, StoreError> {
    let row = Sql::new(select_channels!("integration = ? AND task_id = ?"))
        .bind(integration)
        .bind(task.as_str())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// A channel by its id.
pub(crate) async fn by_id<C: Conn + ?Sized>(
    conn: &mut C,
    integration: &str,
    channel: &str,
) -> Result<Option<ChannelRecord>, StoreError> {
    let row = Sql::new(select_channels!("integration = ? AND channel_id = ?"))
        .bind(integration)
        .bind(channel)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Channels not closed yet, oldest first.
pub(crate) async fn open<C: Conn + ?Sized>(
    conn: &mut C,
    integration: &str,
) -> Result<Vec<ChannelRecord>, StoreError> {
    let rows = Sql::new(select_channels!(
        "integration = ? AND closed_at IS NULL ORDER BY created_at, task_id"
    ))
    .bind(integration)
    .fetch_all(conn)
    .await?;
    rows.iter().map(from_row).collect()
}

/// A stored position.
pub(crate) async fn cursor<C: Conn + ?Sized>(
    conn: &mut C,
    integration: &str,
    name: &str,
) -> Result<Option<String>, StoreError> {
    let row = Sql::new("SELECT value FROM integration_cursors WHERE integration = ? AND name = ?")
        .bind(integration)
        .bind(name)
        .fetch_optional(conn)
        .await?;
    row.map(|row| row.text("integration_cursors", "value"))
        .transpose()
}

/// Stores a position.
pub(crate) async fn set_cursor<C: Conn + ?Sized>(
    conn: &mut C,
    integration: &str,
    name: &str,
    value: &str,
) -> Result<(), StoreError> {
    Sql::new(
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
pub(crate) async fn mark_applied<C: Conn + ?Sized>(
    conn: &mut C,
    integration: &str,
    key: &str,
    at: i64,
) -> Result<bool, StoreError> {
    let done = Sql::new(
        "INSERT INTO integration_applied (integration, key, applied_at) VALUES (?, ?, ?) \
         ON CONFLICT (integration, key) DO NOTHING",
    )
    .bind(integration)
    .bind(key)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(done == 1)
}
