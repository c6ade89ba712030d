//! A task's event log and artifacts.

use std::sync::LazyLock;

use handoff_task::{Artifact, ArtifactBody, EventKind, NewEvent, TaskEvent, TaskId};
use serde_json::Value;
use sqlx::{SqliteConnection, SqlitePool};

use super::inline::{Miss, Named, column_names};
use super::limit::limit_param;
use crate::rows::{
    artifact_columns, artifact_from_row, event_columns, event_from_row, to_i64, to_u64,
};
use crate::{NewArtifact, StoreError};

/// A status event recording a move between states.
pub(super) fn status_event(message: impl Into<String>, data: Value) -> NewEvent {
    NewEvent::new(EventKind::Status, message).with_data(data)
}

/// Appends `events` after the task's last one. Must run inside a write transaction: the
/// max-then-insert numbering is only gap- and duplicate-free because writers are serialized.
pub(super) async fn append(
    conn: &mut SqliteConnection,
    id: &TaskId,
    at: i64,
    events: &[NewEvent],
) -> Result<Vec<i64>, StoreError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let last: i64 =
        sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM task_events WHERE task_id = ?")
            .bind(id.as_str())
            .fetch_one(&mut *conn)
            .await?;
    let mut seqs = Vec::with_capacity(events.len());
    for (seq, event) in (last + 1..).zip(events) {
        // A missing task fails here on the foreign key, rolling back the whole batch.
        sqlx::query(
            "INSERT INTO task_events (task_id, seq, at, kind, message, data) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(id.as_str())
        .bind(seq)
        .bind(at)
        .bind(event.kind.as_str())
        .bind(event.message.as_str())
        .bind(event.data.to_string())
        .execute(&mut *conn)
        .await?;
        seqs.push(seq);
    }
    Ok(seqs)
}

/// A page of events in order, plus the total, from one consistent snapshot.
pub(super) async fn page(
    read: &SqlitePool,
    id: &TaskId,
    offset: u64,
    limit: u32,
) -> Result<(Vec<TaskEvent>, u64), StoreError> {
    let mut tx = read.begin().await?;
    let rows = sqlx::query(concat!(
        "SELECT ",
        event_columns!(),
        " FROM task_events WHERE task_id = ? ORDER BY seq",
        limit_param!(),
        " OFFSET ?"
    ))
    .bind(id.as_str())
    .bind(i64::from(limit))
    .bind(to_i64(offset))
    .fetch_all(&mut *tx)
    .await?;
    let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM task_events WHERE task_id = ?")
        .bind(id.as_str())
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    let events = rows.iter().map(event_from_row).collect::<Result<_, _>>()?;
    Ok((events, to_u64(total)))
}

/// A task's newest events, newest first, up to a bound count.
const NEWEST: &str = concat!(
    "SELECT ",
    event_columns!(),
    " FROM task_events WHERE task_id = ? ORDER BY seq DESC",
    limit_param!()
);

/// The names of [`event_columns`], for rows read inline.
static EVENT_COLUMNS: LazyLock<Vec<&str>> = LazyLock::new(|| column_names(event_columns!()));

/// A task's newest event of one kind.
const NEWEST_OF_KIND: &str = concat!(
    "SELECT ",
    event_columns!(),
    " FROM task_events WHERE task_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1"
);

/// The last `n` events, oldest first.
pub(super) async fn recent(
    read: &SqlitePool,
    id: &TaskId,
    n: u32,
) -> Result<Vec<TaskEvent>, StoreError> {
    let rows = sqlx::query(NEWEST)
        .bind(id.as_str())
        .bind(i64::from(n))
        .fetch_all(read)
        .await?;
    rows.iter().rev().map(event_from_row).collect()
}

/// [`recent`] on the calling thread (see [`super::inline`]).
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

/// [`last_of_kind`] on the calling thread (see [`super::inline`]).
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

/// The newest event of `kind`: a backwards walk of the task's (task_id, seq) key.
pub(super) async fn last_of_kind(
    read: &SqlitePool,
    id: &TaskId,
    kind: EventKind,
) -> Result<Option<TaskEvent>, StoreError> {
    let row = sqlx::query(NEWEST_OF_KIND)
        .bind(id.as_str())
        .bind(kind.as_str())
        .fetch_optional(read)
        .await?;
    row.as_ref().map(event_from_row).transpose()
}

/// Stores or replaces the task's artifact of this kind.
pub(super) async fn put_artifact(
    conn: &mut SqliteConnection,
    id: &TaskId,
    at: i64,
    artifact: &NewArtifact,
) -> Result<(), StoreError> {
    let (inline, file_path) = match &artifact.body {
        ArtifactBody::Inline(bytes) => (Some(bytes.as_slice()), None),
        ArtifactBody::File(path) => {
            // A lossy conversion would store a path that no longer names the spilled file.
            let text = path.to_str().ok_or_else(|| StoreError::Io {
                path: path.display().to_string(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "artifact path is not valid UTF-8",
                ),
            })?;
            (None, Some(text))
        }
    };
    sqlx::query(
        "INSERT INTO task_artifacts (task_id, kind, size, capped, inline, file_path, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (task_id, kind) DO UPDATE SET size = excluded.size, \
         capped = excluded.capped, inline = excluded.inline, file_path = excluded.file_path, \
         created_at = excluded.created_at",
    )
    .bind(id.as_str())
    .bind(artifact.kind.as_str())
    .bind(to_i64(artifact.size))
    .bind(artifact.capped)
    .bind(inline)
    .bind(file_path)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A task's artifacts, in kind order.
pub(super) async fn artifacts(read: &SqlitePool, id: &TaskId) -> Result<Vec<Artifact>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        artifact_columns!(),
        " FROM task_artifacts WHERE task_id = ? ORDER BY kind"
    ))
    .bind(id.as_str())
    .fetch_all(read)
    .await?;
    rows.iter().map(artifact_from_row).collect()
}
