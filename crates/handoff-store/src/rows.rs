//! Turning stored rows back into domain values, for SQLite's and PostgreSQL's rows alike (each
//! row type reads its columns through [`StoredRow`]). Anything unexpected becomes
//! [`StoreError::Corrupt`] naming the table, so one bad row is reported instead of panicking.

use std::path::PathBuf;

use handoff_task::{
    AgentId, Artifact, ArtifactBody, ArtifactKind, EventKind, ExitInfo, Lease, Task, TaskEvent,
    TaskId, TaskOptions, TaskStatus,
};
use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type, postgres::PgRow, sqlite::SqliteRow};

use crate::StoreError;

/// The `tasks` columns [`task_from_row`] reads, as a literal so queries can `concat!` it.
macro_rules! task_columns {
    () => {
        "queue_seq, id, agent_id, description, executor, options, status, priority, workdir, \
         created_at, started_at, completed_at, exit_code, exit_signal, error, idempotency_key, \
         metadata, runner_state, result_delivered_at, owner, lease_until, fence"
    };
}
pub(crate) use task_columns;

/// The `task_events` columns [`event_from_row`] reads.
macro_rules! event_columns {
    () => {
        "task_id, seq, at, kind, message, data"
    };
}
pub(crate) use event_columns;

/// The `task_artifacts` columns [`artifact_from_row`] reads.
macro_rules! artifact_columns {
    () => {
        "task_id, kind, size, capped, inline, file_path, created_at"
    };
}
pub(crate) use artifact_columns;

const TASKS: &str = "tasks";
const EVENTS: &str = "task_events";
const ARTIFACTS: &str = "task_artifacts";

/// A [`StoreError::Corrupt`] for `table`.
pub(crate) fn corrupt(table: &'static str, message: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        table,
        message: message.into(),
    }
}

/// One column; a type mismatch is corruption, not a database failure.
fn column<'r, R, T>(row: &'r R, table: &'static str, name: &str) -> Result<T, StoreError>
where
    R: Row,
    T: Decode<'r, R::Database> + Type<R::Database>,
    for<'n> &'n str: ColumnIndex<R>,
{
    row.try_get(name)
        .map_err(|e| corrupt(table, format!("column `{name}`: {e}")))
}

/// A database row, read by the column types Handoff stores.
pub(crate) trait StoredRow {
    /// A text column.
    fn text(&self, table: &'static str, name: &str) -> Result<String, StoreError>;
    /// A nullable text column.
    fn text_opt(&self, table: &'static str, name: &str) -> Result<Option<String>, StoreError>;
    /// An integer column.
    fn int(&self, table: &'static str, name: &str) -> Result<i64, StoreError>;
    /// A nullable integer column.
    fn int_opt(&self, table: &'static str, name: &str) -> Result<Option<i64>, StoreError>;
    /// A nullable blob column.
    fn bytes_opt(&self, table: &'static str, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// A boolean column.
    fn flag(&self, table: &'static str, name: &str) -> Result<bool, StoreError>;
}

macro_rules! stored_row {
    ($($row:ty),*) => {$(
        impl StoredRow for $row {
            fn text(&self, table: &'static str, name: &str) -> Result<String, StoreError> {
                column(self, table, name)
            }
            fn text_opt(&self, table: &'static str, name: &str) -> Result<Option<String>, StoreError> {
                column(self, table, name)
            }
            fn int(&self, table: &'static str, name: &str) -> Result<i64, StoreError> {
                column(self, table, name)
            }
            fn int_opt(&self, table: &'static str, name: &str) -> Result<Option<i64>, StoreError> {
                column(self, table, name)
            }
            fn bytes_opt(&self, table: &'static str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
                column(self, table, name)
            }
            fn flag(&self, table: &'static str, name: &str) -> Result<bool, StoreError> {
                column(self, table, name)
            }
        }
    )*};
}
stored_row!(SqliteRow, PgRow);

fn json(table: &'static str, what: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(table, format!("{what}: invalid JSON: {e}")))
}

fn small_int(table: &'static str, what: &str, value: i64) -> Result<i32, StoreError> {
    i32::try_from(value).map_err(|_| corrupt(table, format!("{what}: {value} out of range")))
}

pub(crate) fn task_id(table: &'static str, text: &str) -> Result<TaskId, StoreError> {
    TaskId::parse(text).map_err(|e| corrupt(table, e.to_string()))
}

/// Parses a stored status name.
pub(crate) fn status(table: &'static str, text: &str) -> Result<TaskStatus, StoreError> {
    text.parse()
        .map_err(|e: handoff_task::UnknownStatus| corrupt(table, e.to_string()))
}

/// A `tasks` row selected with [`task_columns`].
pub(crate) fn task_from_row(row: &impl StoredRow) -> Result<Task, StoreError> {
    let id = task_id(TASKS, &row.text(TASKS, "id")?)?;
    // Every later message names the task, so a report points straight at the bad row.
    let bad = |what: &str, e: &dyn std::fmt::Display| corrupt(TASKS, format!("{id}: {what}: {e}"));

    let agent_id =
        AgentId::parse(&row.text(TASKS, "agent_id")?).map_err(|e| bad("agent_id", &e))?;
    let options: TaskOptions =
        serde_json::from_str(&row.text(TASKS, "options")?).map_err(|e| bad("options", &e))?;
    let status = row
        .text(TASKS, "status")?
        .parse::<TaskStatus>()
        .map_err(|e| bad("status", &e))?;
    let priority = small_int(TASKS, "priority", row.int(TASKS, "priority")?)?;
    let exit_code = row
        .int_opt(TASKS, "exit_code")?
        .map(|v| small_int(TASKS, "exit_code", v))
        .transpose()?;
    let exit_signal = row
        .int_opt(TASKS, "exit_signal")?
        .map(|v| small_int(TASKS, "exit_signal", v))
        .transpose()?;
    let exit = (exit_code.is_some() || exit_signal.is_some()).then_some(ExitInfo {
        code: exit_code,
        signal: exit_signal,
    });
    let metadata =
        serde_json::from_str(&row.text(TASKS, "metadata")?).map_err(|e| bad("metadata", &e))?;
    let runner_state = row
        .text_opt(TASKS, "runner_state")?
        .map(|text| serde_json::from_str(&text).map_err(|e| bad("runner_state", &e)))
        .transpose()?;

    Ok(Task {
        agent_id,
        description: row.text(TASKS, "description")?,
        executor: row.text(TASKS, "executor")?,
        options,
        status,
        priority,
        queue_seq: row.int(TASKS, "queue_seq")?,
        workdir: row.text(TASKS, "workdir")?,
        created_at: row.int(TASKS, "created_at")?,
        started_at: row.int_opt(TASKS, "started_at")?,
        completed_at: row.int_opt(TASKS, "completed_at")?,
        exit,
        error: row.text_opt(TASKS, "error")?,
        idempotency_key: row.text_opt(TASKS, "idempotency_key")?,
        metadata,
        runner_state,
        result_delivered_at: row.int_opt(TASKS, "result_delivered_at")?,
        lease: match (
            row.text_opt(TASKS, "owner")?,
            row.int_opt(TASKS, "lease_until")?,
        ) {
            (Some(owner), Some(until)) => Some(Lease { owner, until }),
            _ => None,
        },
        fence: row.int(TASKS, "fence")?,
        id,
    })
}

/// A `task_events` row selected with [`event_columns`].
pub(crate) fn event_from_row(row: &impl StoredRow) -> Result<TaskEvent, StoreError> {
    let kind = row
        .text(EVENTS, "kind")?
        .parse::<EventKind>()
        .map_err(|e| corrupt(EVENTS, e))?;
    Ok(TaskEvent {
        task_id: task_id(EVENTS, &row.text(EVENTS, "task_id")?)?,
        seq: row.int(EVENTS, "seq")?,
        at: row.int(EVENTS, "at")?,
        kind,
        message: row.text(EVENTS, "message")?,
        data: json(EVENTS, "data", &row.text(EVENTS, "data")?)?,
    })
}

/// A `task_artifacts` row selected with [`artifact_columns`].
pub(crate) fn artifact_from_row(row: &impl StoredRow) -> Result<Artifact, StoreError> {
    let kind = row
        .text(ARTIFACTS, "kind")?
        .parse::<ArtifactKind>()
        .map_err(|e| corrupt(ARTIFACTS, e))?;
    let size = row.int(ARTIFACTS, "size")?;
    let size = u64::try_from(size).map_err(|_| corrupt(ARTIFACTS, format!("size {size}")))?;
    let inline = row.bytes_opt(ARTIFACTS, "inline")?;
    let file_path = row.text_opt(ARTIFACTS, "file_path")?;
    let body = match (inline, file_path) {
        (Some(bytes), None) => ArtifactBody::Inline(bytes),
        (None, Some(path)) => ArtifactBody::File(PathBuf::from(path)),
        _ => {
            return Err(corrupt(
                ARTIFACTS,
                "exactly one of `inline` and `file_path` must be set",
            ));
        }
    };
    Ok(Artifact {
        task_id: task_id(ARTIFACTS, &row.text(ARTIFACTS, "task_id")?)?,
        kind,
        size,
        capped: row.flag(ARTIFACTS, "capped")?,
        body,
        created_at: row.int(ARTIFACTS, "created_at")?,
    })
}

/// Task options as stored.
pub(crate) fn options_json(options: &TaskOptions) -> Result<String, StoreError> {
    // Cannot fail for this plain struct; mapped rather than unwrapped to keep the crate panic-free.
    serde_json::to_string(options).map_err(|e| corrupt(TASKS, format!("encoding options: {e}")))
}

/// A stored `u64`/`u32` count or size as SQL's signed integer.
pub(crate) fn to_i64(value: u64) -> i64 {
    // Counts and sizes beyond i64::MAX cannot occur; saturating keeps comparisons meaningful.
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A `COUNT(*)` as the `u64` the trait reports.
pub(crate) fn to_u64(count: i64) -> u64 {
    u64::try_from(count).unwrap_or(0)
}

/// Records a task's runner state.
pub(crate) const SET_RUNNER_STATE: &str = "UPDATE tasks SET runner_state = ? WHERE id = ?";

/// Moves a task to another directory.
pub(crate) const SET_WORKDIR: &str = "UPDATE tasks SET workdir = ? WHERE id = ?";
