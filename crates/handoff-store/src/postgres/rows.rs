//! Turning stored rows back into domain values. Anything unexpected becomes
//! [`StoreError::Corrupt`] naming the table, so one bad row is reported instead of panicking.

use std::path::PathBuf;

use handoff_task::{
    AgentId, Artifact, ArtifactBody, ArtifactKind, EventKind, ExitInfo, Task, TaskEvent, TaskId,
    TaskOptions, TaskStatus,
};
use serde_json::Value;
use sqlx::{Decode, Postgres, Row, Type, postgres::PgRow};

use crate::StoreError;

/// The `tasks` columns [`task_from_row`] reads, as a literal so queries can `concat!` it.
macro_rules! task_columns {
    () => {
        "queue_seq, id, agent_id, description, executor, options, status, priority, workdir, \
         created_at, started_at, completed_at, exit_code, exit_signal, error, idempotency_key, \
         metadata, runner_state, result_delivered_at"
    };
}
pub(super) use task_columns;

/// The `task_events` columns [`event_from_row`] reads.
macro_rules! event_columns {
    () => {
        "task_id, seq, at, kind, message, data"
    };
}
pub(super) use event_columns;

/// The `task_artifacts` columns [`artifact_from_row`] reads.
macro_rules! artifact_columns {
    () => {
        "task_id, kind, size, capped, inline, file_path, created_at"
    };
}
pub(super) use artifact_columns;

const TASKS: &str = "tasks";
const EVENTS: &str = "task_events";
const ARTIFACTS: &str = "task_artifacts";

/// A [`StoreError::Corrupt`] for `table`.
pub(super) fn corrupt(table: &'static str, message: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        table,
        message: message.into(),
    }
}

/// One column; a type mismatch is corruption, not a database failure.
fn column<'r, T>(row: &'r PgRow, table: &'static str, name: &str) -> Result<T, StoreError>
where
    T: Decode<'r, Postgres> + Type<Postgres>,
{
    row.try_get(name)
        .map_err(|e| corrupt(table, format!("column `{name}`: {e}")))
}

fn json(table: &'static str, what: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(table, format!("{what}: invalid JSON: {e}")))
}

fn small_int(table: &'static str, what: &str, value: i64) -> Result<i32, StoreError> {
    i32::try_from(value).map_err(|_| corrupt(table, format!("{what}: {value} out of range")))
}

fn task_id(table: &'static str, text: &str) -> Result<TaskId, StoreError> {
    TaskId::parse(text).map_err(|e| corrupt(table, e.to_string()))
}

/// Parses a stored status name.
pub(super) fn status(table: &'static str, text: &str) -> Result<TaskStatus, StoreError> {
    text.parse()
        .map_err(|e: handoff_task::UnknownStatus| corrupt(table, e.to_string()))
}

/// A `tasks` row selected with [`task_columns`].
pub(super) fn task_from_row(row: &PgRow) -> Result<Task, StoreError> {
    let id = task_id(TASKS, &column::<String>(row, TASKS, "id")?)?;
    // Every later message names the task, so a report points straight at the bad row.
    let bad = |what: &str, e: &dyn std::fmt::Display| corrupt(TASKS, format!("{id}: {what}: {e}"));

    let agent_id = AgentId::parse(&column::<String>(row, TASKS, "agent_id")?)
        .map_err(|e| bad("agent_id", &e))?;
    let options: TaskOptions = serde_json::from_str(&column::<String>(row, TASKS, "options")?)
        .map_err(|e| bad("options", &e))?;
    let status = column::<String>(row, TASKS, "status")?
        .parse::<TaskStatus>()
        .map_err(|e| bad("status", &e))?;
    let priority = small_int(TASKS, "priority", column(row, TASKS, "priority")?)?;
    let exit_code = column::<Option<i64>>(row, TASKS, "exit_code")?
        .map(|v| small_int(TASKS, "exit_code", v))
        .transpose()?;
    let exit_signal = column::<Option<i64>>(row, TASKS, "exit_signal")?
        .map(|v| small_int(TASKS, "exit_signal", v))
        .transpose()?;
    let exit = (exit_code.is_some() || exit_signal.is_some()).then_some(ExitInfo {
        code: exit_code,
        signal: exit_signal,
    });
    let metadata = serde_json::from_str(&column::<String>(row, TASKS, "metadata")?)
        .map_err(|e| bad("metadata", &e))?;
    let runner_state = column::<Option<String>>(row, TASKS, "runner_state")?
        .map(|text| serde_json::from_str(&text).map_err(|e| bad("runner_state", &e)))
        .transpose()?;

    Ok(Task {
        agent_id,
        description: column(row, TASKS, "description")?,
        executor: column(row, TASKS, "executor")?,
        options,
        status,
        priority,
        queue_seq: column(row, TASKS, "queue_seq")?,
        workdir: column(row, TASKS, "workdir")?,
        created_at: column(row, TASKS, "created_at")?,
        started_at: column(row, TASKS, "started_at")?,
        completed_at: column(row, TASKS, "completed_at")?,
        exit,
        error: column(row, TASKS, "error")?,
        idempotency_key: column(row, TASKS, "idempotency_key")?,
        metadata,
        runner_state,
        result_delivered_at: column(row, TASKS, "result_delivered_at")?,
        id,
    })
}

/// A `task_events` row selected with [`event_columns`].
pub(super) fn event_from_row(row: &PgRow) -> Result<TaskEvent, StoreError> {
    let kind = column::<String>(row, EVENTS, "kind")?
        .parse::<EventKind>()
        .map_err(|e| corrupt(EVENTS, e))?;
    Ok(TaskEvent {
        task_id: task_id(EVENTS, &column::<String>(row, EVENTS, "task_id")?)?,
        seq: column(row, EVENTS, "seq")?,
        at: column(row, EVENTS, "at")?,
        kind,
        message: column(row, EVENTS, "message")?,
        data: json(EVENTS, "data", &column::<String>(row, EVENTS, "data")?)?,
    })
}

/// A `task_artifacts` row selected with [`artifact_columns`].
pub(super) fn artifact_from_row(row: &PgRow) -> Result<Artifact, StoreError> {
    let kind = column::<String>(row, ARTIFACTS, "kind")?
        .parse::<ArtifactKind>()
        .map_err(|e| corrupt(ARTIFACTS, e))?;
    let size = column::<i64>(row, ARTIFACTS, "size")?;
    let size = u64::try_from(size).map_err(|_| corrupt(ARTIFACTS, format!("size {size}")))?;
    let inline = column::<Option<Vec<u8>>>(row, ARTIFACTS, "inline")?;
    let file_path = column::<Option<String>>(row, ARTIFACTS, "file_path")?;
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
        task_id: task_id(ARTIFACTS, &column::<String>(row, ARTIFACTS, "task_id")?)?,
        kind,
        size,
        capped: column(row, ARTIFACTS, "capped")?,
        body,
        created_at: column(row, ARTIFACTS, "created_at")?,
    })
}

/// Task options as stored.
pub(super) fn options_json(options: &TaskOptions) -> Result<String, StoreError> {
    // Cannot fail for this plain struct; mapped rather than unwrapped to keep the crate panic-free.
    serde_json::to_string(options).map_err(|e| corrupt(TASKS, format!("encoding options: {e}")))
}

/// A stored `u64`/`u32` count or size as SQL's signed integer.
pub(super) fn to_i64(value: u64) -> i64 {
    // Counts and sizes beyond i64::MAX cannot occur; saturating keeps comparisons meaningful.
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A `COUNT(*)` as the `u64` the trait reports.
pub(super) fn to_u64(count: i64) -> u64 {
    u64::try_from(count).unwrap_or(0)
}
