//! A task's event log and artifacts.

use handoff_task::{Artifact, ArtifactBody, EventKind, NewEvent, TaskEvent, TaskId};
use serde_json::Value;

use super::limit_param;
use crate::rows::{
    StoredRow, artifact_columns, artifact_from_row, event_columns, event_from_row, to_i64, to_u64,
};
use crate::sql::{Conn, Sql};
use crate::{NewArtifact, StoreError};

const EVENTS: &str = "task_events";

/// A task's newest events, newest first, up to a bound count.
pub(crate) const NEWEST: &str = concat!(
    "SELECT ",
    event_columns!(),
    " FROM task_events WHERE task_id = ? ORDER BY seq DESC",
    limit_param!()
);

/// A task's newest event of one kind.
pub(crate) const NEWEST_OF_KIND: &str = concat!(
    "SELECT ",
    event_columns!(),
    " FROM task_events WHERE task_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1"
);

/// A status event recording a move between states.
pub(crate) fn status_event(message: impl Into<String>, data: Value) -> NewEvent {
    NewEvent::new(EventKind::Status, message).with_data(data)
}

/// Appends `events` after the task's last one. Must run inside a write transaction holding the
/// task: the max-then-insert numbering is only gap- and duplicate-free because its writers are
/// serialized.
pub(crate) async fn append<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
    at: i64,
    events: &[NewEvent],
) -> Result<Vec<i64>, StoreError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    // The first event is numbered in the statement that writes it (one round trip for the
    // usual single event); the rest follow it. A missing task fails on the foreign key,
    // rolling back the whole batch.
    let first = &events[0];
    let seq = Sql::new(
        "INSERT INTO task_events (task_id, seq, at, kind, message, data) \
         SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ? FROM task_events WHERE task_id = ? \
         RETURNING seq",
    )
    .bind(id.as_str())
    .bind(at)
    .bind(first.kind.as_str())
    .bind(first.message.as_str())
    .bind(first.data.to_string())
    .bind(id.as_str())
    .fetch_one(conn)
    .await?
    .int(EVENTS, "seq")?;
    let mut seqs = Vec::with_capacity(events.len());
    seqs.push(seq);
    for (seq, event) in (seq + 1..).zip(&events[1..]) {
        // A missing task fails here on the foreign key, rolling back the whole batch.
        Sql::new(
            "INSERT INTO task_events (task_id, seq, at, kind, message, data) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(id.as_str())
        .bind(seq)
        .bind(at)
        .bind(event.kind.as_str())
        .bind(event.message.as_str())
        .bind(event.data.to_string())
        .execute(conn)
        .await?;
        seqs.push(seq);
    }
    Ok(seqs)
}

/// A page of events in order, plus the total; `conn` reads one consistent snapshot.
pub(crate) async fn page<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
    offset: u64,
    limit: u32,
) -> Result<(Vec<TaskEvent>, u64), StoreError> {
    let rows = Sql::new(concat!(
        "SELECT ",
        event_columns!(),
        " FROM task_events WHERE task_id = ? ORDER BY seq",
        limit_param!(),
        " OFFSET ?"
    ))
    .bind(id.as_str())
    .bind(i64::from(limit))
    .bind(to_i64(offset))
    .fetch_all(conn)
    .await?;
    let total = Sql::new("SELECT COUNT(*) AS n FROM task_events WHERE task_id = ?")
        .bind(id.as_str())
        .fetch_one(conn)
        .await?
        .int(EVENTS, "n")?;
    let events = rows.iter().map(event_from_row).collect::<Result<_, _>>()?;
    Ok((events, to_u64(total)))
}

/// The last `n` events, oldest first.
pub(crate) async fn recent<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
    n: u32,
) -> Result<Vec<TaskEvent>, StoreError> {
    let rows = Sql::new(NEWEST)
        .bind(id.as_str())
        .bind(i64::from(n))
        .fetch_all(conn)
        .await?;
    rows.iter().rev().map(event_from_row).collect()
}

/// The newest event of `kind`: a backwards walk of the task's (task_id, seq) key.
pub(crate) async fn last_of_kind<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
    kind: EventKind,
) -> Result<Option<TaskEvent>, StoreError> {
    let row = Sql::new(NEWEST_OF_KIND)
        .bind(id.as_str())
        .bind(kind.as_str())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(event_from_row).transpose()
}

/// Stores or replaces the task's artifact of this kind.
pub(crate) async fn put_artifact<C: Conn + ?Sized>(
    conn: &mut C,
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
    Sql::new(
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
    .execute(conn)
    .await?;
    Ok(())
}

/// A task's artifacts, in kind order.
pub(crate) async fn artifacts<C: Conn + ?Sized>(
    conn: &mut C,
    id: &TaskId,
) -> Result<Vec<Artifact>, StoreError> {
    let rows = Sql::new(concat!(
        "SELECT ",
        artifact_columns!(),
        " FROM task_artifacts WHERE task_id = ? ORDER BY kind"
    ))
    .bind(id.as_str())
    .fetch_all(conn)
    .await?;
    rows.iter().map(artifact_from_row).collect()
}
