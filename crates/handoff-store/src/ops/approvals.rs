//! Standing approvals and the audit trail.

use super::limit_param;
use crate::sql::{Conn, Sql};
use crate::{AuditFilter, StoreError, rows::StoredRow};
use handoff_task::{AgentId, Approval, ApprovalScope, AuditRecord, TaskId};

const APPROVALS: &str = "approvals";
const AUDIT: &str = "audit";

fn corrupt(e: impl ToString) -> StoreError {
    StoreError::Corrupt {
        table: "approvals",
        message: e.to_string(),
    }
}

fn approval_from_row(row: &impl StoredRow) -> Result<Approval, StoreError> {
    let scope = row.text(APPROVALS, "scope")?;
    let agent = row.text(APPROVALS, "agent_id")?;
    let task = row.text(APPROVALS, "task_id")?;
    Ok(Approval {
        id: row.text(APPROVALS, "id")?,
        agent_id: AgentId::parse(&agent).map_err(corrupt)?,
        scope: ApprovalScope::parse(&scope)
            .ok_or_else(|| corrupt(format!("unknown approval scope {scope}")))?,
        task_id: TaskId::parse(&task).map_err(corrupt)?,
        project: row.text(APPROVALS, "project")?,
        permission: row.text(APPROVALS, "permission")?,
        pattern: row.text(APPROVALS, "pattern")?,
        created_at: row.int(APPROVALS, "created_at")?,
    })
}

macro_rules! select_approvals {
    ($where:literal) => {
        concat!(
            "SELECT id, agent_id, scope, task_id, project, permission, pattern, created_at ",
            "FROM approvals WHERE ",
            $where
        )
    };
}

pub(crate) async fn insert<C: Conn + ?Sized>(conn: &mut C, a: &Approval) -> Result<(), StoreError> {
    Sql::new(
        "INSERT INTO approvals (id, agent_id, scope, task_id, project, permission, pattern, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(a.id.as_str())
    .bind(a.agent_id.as_str())
    .bind(a.scope.as_str())
    .bind(a.task_id.as_str())
    .bind(a.project.as_str())
    .bind(a.permission.as_str())
    .bind(a.pattern.as_str())
    .bind(a.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Approvals usable by one task: its own task-scope ones and its agent's for its project.
pub(crate) async fn for_task<C: Conn + ?Sized>(
    conn: &mut C,
    agent: &AgentId,
    task: &TaskId,
    project: &str,
) -> Result<Vec<Approval>, StoreError> {
    let rows = Sql::new(select_approvals!(
        "agent_id = ? AND \
         ((scope = 'task' AND task_id = ?) OR (scope = 'project' AND project = ?)) \
         ORDER BY created_at, id"
    ))
    .bind(agent.as_str())
    .bind(task.as_str())
    .bind(project)
    .fetch_all(conn)
    .await?;
    rows.iter().map(approval_from_row).collect()
}

/// An agent's approvals, optionally only those given in one task.
pub(crate) async fn list<C: Conn + ?Sized>(
    conn: &mut C,
    agent: &AgentId,
    task: Option<&TaskId>,
) -> Result<Vec<Approval>, StoreError> {
    let rows = match task {
        Some(task) => {
            Sql::new(select_approvals!(
                "agent_id = ? AND task_id = ? \
                 ORDER BY created_at, id"
            ))
            .bind(agent.as_str())
            .bind(task.as_str())
            .fetch_all(conn)
            .await?
        }
        None => {
            Sql::new(select_approvals!("agent_id = ? ORDER BY created_at, id"))
                .bind(agent.as_str())
                .fetch_all(conn)
                .await?
        }
    };
    rows.iter().map(approval_from_row).collect()
}

/// Deletes one of `agent`'s approvals; returns it if it existed.
pub(crate) async fn revoke<C: Conn + ?Sized>(
    conn: &mut C,
    agent: &AgentId,
    id: &str,
) -> Result<Option<Approval>, StoreError> {
    let row = Sql::new(select_approvals!("id = ? AND agent_id = ?"))
        .bind(id)
        .bind(agent.as_str())
        .fetch_optional(conn)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let approval = approval_from_row(&row)?;
    Sql::new("DELETE FROM approvals WHERE id = ?")
        .bind(id)
        .execute(conn)
        .await?;
    Ok(Some(approval))
}

/// Removes the task-scope approvals of a purged task.
pub(crate) async fn purge_task<C: Conn + ?Sized>(
    conn: &mut C,
    task: &TaskId,
) -> Result<(), StoreError> {
    Sql::new("DELETE FROM approvals WHERE scope = 'task' AND task_id = ?")
        .bind(task.as_str())
        .execute(conn)
        .await?;
    Ok(())
}

/// Longest short field of an audit row (source, subject, outcome, stage), in bytes.
const AUDIT_NAME_BYTES: usize = 256;
/// Longest reason of an audit row, in bytes.
const AUDIT_REASON_BYTES: usize = 2048;
/// Longest detail of an audit row (its JSON text), in bytes.
const AUDIT_DETAIL_BYTES: usize = 4096;

/// `text` cut to at most `max` bytes on a character boundary, marked with its full size.
fn bounded(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = max.saturating_sub(32);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len()))
}

/// The detail as stored: whole when small, else a note of its size (clipped JSON would not
/// parse back).
fn bounded_detail(detail: &serde_json::Value) -> String {
    let text = detail.to_string();
    if text.len() <= AUDIT_DETAIL_BYTES {
        text
    } else {
        serde_json::json!({ "truncated": true, "bytes": text.len() }).to_string()
    }
}

/// Appends one audit row. Every field is bounded here, where the row is built: whatever a
/// caller or an executor put into a record (a huge argument quoted in a reason, say), one row
/// stays a few KiB.
pub(crate) async fn append_audit<C: Conn + ?Sized>(
    conn: &mut C,
    r: &AuditRecord,
) -> Result<i64, StoreError> {
    Sql::new(
        "INSERT INTO audit (at, agent_id, task_id, source, subject, outcome, stage, reason, detail) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
    )
    .bind(r.at)
    .bind(r.agent_id.as_ref().map(AgentId::as_str))
    .bind(r.task_id.as_ref().map(TaskId::as_str))
    .bind(bounded(&r.source, AUDIT_NAME_BYTES).into_owned())
    .bind(bounded(&r.subject, AUDIT_NAME_BYTES).into_owned())
    .bind(bounded(&r.outcome, AUDIT_NAME_BYTES).into_owned())
    .bind(bounded(&r.stage, AUDIT_NAME_BYTES).into_owned())
    .bind(bounded(&r.reason, AUDIT_REASON_BYTES).into_owned())
    .bind(bounded_detail(&r.detail))
    .fetch_one(conn)
    .await?
    .int(AUDIT, "seq")
}

/// Audit records of one agent (or of every agent), newest first.
pub(crate) async fn audit<C: Conn + ?Sized>(
    conn: &mut C,
    filter: &AuditFilter,
) -> Result<Vec<AuditRecord>, StoreError> {
    let mut sql = Sql::new(
        "SELECT seq, at, agent_id, task_id, source, subject, outcome, stage, reason, detail FROM audit WHERE 1 = 1",
    );
    if let Some(agent) = &filter.agent {
        sql.push_bind(" AND agent_id = ?", agent.as_str());
    }
    if let Some(task) = &filter.task {
        sql.push_bind(" AND task_id = ?", task.as_str());
    }
    if let Some(before) = filter.before_seq {
        sql.push_bind(" AND seq < ?", before);
    }
    sql.push(" ORDER BY seq DESC")
        .push_bind(limit_param!(), i64::from(filter.limit));
    let rows = sql.fetch_all(conn).await?;
    rows.iter()
        .map(|row| {
            let agent = row.text_opt(AUDIT, "agent_id")?;
            let task = row.text_opt(AUDIT, "task_id")?;
            let detail = row.text(AUDIT, "detail")?;
            Ok(AuditRecord {
                seq: row.int(AUDIT, "seq")?,
                at: row.int(AUDIT, "at")?,
                agent_id: agent.and_then(|a| AgentId::parse(&a).ok()),
                task_id: task.and_then(|t| TaskId::parse(&t).ok()),
                source: row.text(AUDIT, "source")?,
                subject: row.text(AUDIT, "subject")?,
                outcome: row.text(AUDIT, "outcome")?,
                stage: row.text(AUDIT, "stage")?,
                reason: row.text(AUDIT, "reason")?,
                detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
            })
        })
        .collect()
}

/// Deletes audit records older than `before`.
pub(crate) async fn purge_audit<C: Conn + ?Sized>(
    conn: &mut C,
    before: i64,
) -> Result<(), StoreError> {
    Sql::new("DELETE FROM audit WHERE at < ?")
        .bind(before)
        .execute(conn)
        .await?;
    Ok(())
}
