//! Standing approvals and the audit trail.

use handoff_task::{AgentId, Approval, ApprovalScope, AuditRecord, TaskId};
use sqlx::{PgConnection, PgPool, Row, postgres::PgRow};

use super::{query, query_scalar};
use crate::{AuditFilter, StoreError};

fn corrupt(e: impl ToString) -> StoreError {
    StoreError::Corrupt {
        table: "approvals",
        message: e.to_string(),
    }
}

fn approval_from_row(row: &PgRow) -> Result<Approval, StoreError> {
    let scope: String = row.try_get("scope")?;
    let agent: String = row.try_get("agent_id")?;
    let task: String = row.try_get("task_id")?;
    Ok(Approval {
        id: row.try_get("id")?,
        agent_id: AgentId::parse(&agent).map_err(corrupt)?,
        scope: ApprovalScope::parse(&scope)
            .ok_or_else(|| corrupt(format!("unknown approval scope {scope}")))?,
        task_id: TaskId::parse(&task).map_err(corrupt)?,
        project: row.try_get("project")?,
        permission: row.try_get("permission")?,
        pattern: row.try_get("pattern")?,
        created_at: row.try_get("created_at")?,
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

pub(super) async fn insert(conn: &mut PgConnection, a: &Approval) -> Result<(), StoreError> {
    query(
        "INSERT INTO approvals (id, agent_id, scope, task_id, project, permission, pattern, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&a.id)
    .bind(a.agent_id.as_str())
    .bind(a.scope.as_str())
    .bind(a.task_id.as_str())
    .bind(&a.project)
    .bind(&a.permission)
    .bind(&a.pattern)
    .bind(a.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Approvals usable by one task: its own task-scope ones and its agent's for its project.
pub(super) async fn for_task(
    read: &PgPool,
    agent: &AgentId,
    task: &TaskId,
    project: &str,
) -> Result<Vec<Approval>, StoreError> {
    let rows = query(select_approvals!(
        "agent_id = ? AND \
         ((scope = 'task' AND task_id = ?) OR (scope = 'project' AND project = ?)) \
         ORDER BY created_at, id"
    ))
    .bind(agent.as_str())
    .bind(task.as_str())
    .bind(project)
    .fetch_all(read)
    .await?;
    rows.iter().map(approval_from_row).collect()
}

/// An agent's approvals, optionally only those given in one task.
pub(super) async fn list(
    read: &PgPool,
    agent: &AgentId,
    task: Option<&TaskId>,
) -> Result<Vec<Approval>, StoreError> {
    let rows = match task {
        Some(task) => {
            query(select_approvals!(
                "agent_id = ? AND task_id = ? \
                 ORDER BY created_at, id"
            ))
            .bind(agent.as_str())
            .bind(task.as_str())
            .fetch_all(read)
            .await?
        }
        None => {
            query(select_approvals!("agent_id = ? ORDER BY created_at, id"))
                .bind(agent.as_str())
                .fetch_all(read)
                .await?
        }
    };
    rows.iter().map(approval_from_row).collect()
}

/// Deletes one of `agent`'s approvals; returns it if it existed.
pub(super) async fn revoke(
    conn: &mut PgConnection,
    agent: &AgentId,
    id: &str,
) -> Result<Option<Approval>, StoreError> {
    let row = query(select_approvals!("id = ? AND agent_id = ?"))
        .bind(id)
        .bind(agent.as_str())
        .fetch_optional(&mut *conn)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let approval = approval_from_row(&row)?;
    query("DELETE FROM approvals WHERE id = ?")
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(Some(approval))
}

/// Removes the task-scope approvals of a purged task.
pub(super) async fn purge_task(conn: &mut PgConnection, task: &TaskId) -> Result<(), StoreError> {
    query("DELETE FROM approvals WHERE scope = 'task' AND task_id = ?")
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
pub(super) async fn append_audit(
    conn: &mut PgConnection,
    r: &AuditRecord,
) -> Result<i64, StoreError> {
    let seq: i64 = query_scalar(
        "INSERT INTO audit (at, agent_id, task_id, source, subject, outcome, stage, reason, detail) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
    )
    .bind(r.at)
    .bind(r.agent_id.as_ref().map(AgentId::as_str))
    .bind(r.task_id.as_ref().map(TaskId::as_str))
    .bind(bounded(&r.source, AUDIT_NAME_BYTES))
    .bind(bounded(&r.subject, AUDIT_NAME_BYTES))
    .bind(bounded(&r.outcome, AUDIT_NAME_BYTES))
    .bind(bounded(&r.stage, AUDIT_NAME_BYTES))
    .bind(bounded(&r.reason, AUDIT_REASON_BYTES))
    .bind(bounded_detail(&r.detail))
    .fetch_one(conn)
    .await?;
    Ok(seq)
}

/// Audit records of one agent (or of every agent), newest first.
pub(super) async fn audit(
    read: &PgPool,
    filter: &AuditFilter,
) -> Result<Vec<AuditRecord>, StoreError> {
    let mut qb = sqlx::QueryBuilder::<sqlx::Postgres>::new(
        "SELECT seq, at, agent_id, task_id, source, subject, outcome, stage, reason, detail FROM audit WHERE 1 = 1",
    );
    if let Some(agent) = &filter.agent {
        qb.push(" AND agent_id = ").push_bind(agent.as_str());
    }
    if let Some(task) = &filter.task {
        qb.push(" AND task_id = ").push_bind(task.as_str());
    }
    if let Some(before) = filter.before_seq {
        qb.push(" AND seq < ").push_bind(before);
    }
    qb.push(" ORDER BY seq DESC LIMIT ")
        .push_bind(i64::from(filter.limit));
    let rows = qb.build().fetch_all(read).await?;
    rows.iter()
        .map(|row| {
            let agent: Option<String> = row.try_get("agent_id")?;
            let task: Option<String> = row.try_get("task_id")?;
            let detail: String = row.try_get("detail")?;
            Ok(AuditRecord {
                seq: row.try_get("seq")?,
                at: row.try_get("at")?,
                agent_id: agent.and_then(|a| AgentId::parse(&a).ok()),
                task_id: task.and_then(|t| TaskId::parse(&t).ok()),
                source: row.try_get("source")?,
                subject: row.try_get("subject")?,
                outcome: row.try_get("outcome")?,
                stage: row.try_get("stage")?,
                reason: row.try_get("reason")?,
                detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
            })
        })
        .collect()
}

/// Deletes audit records older than `before`.
pub(super) async fn purge_audit(conn: &mut PgConnection, before: i64) -> Result<(), StoreError> {
    query("DELETE FROM audit WHERE at < ?")
        .bind(before)
        .execute(conn)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ApprovalStore,
        conformance::support::audit_record,
        postgres::{
            PgStore,
            tests::{LIMITS, fresh_database},
        },
    };

    #[tokio::test]
    async fn a_huge_record_is_stored_as_a_bounded_row() {
        let store = PgStore::connect(&fresh_database().await, LIMITS)
            .await
            .unwrap();
        let huge = "x".repeat(1 << 20);
        let mut record = audit_record(1, "agent-a", None);
        record.subject = huge.clone();
        record.reason = format!("invalid arguments: {huge}");
        record.detail = serde_json::json!({ "arguments": huge });
        store.append_audit(&record).await.unwrap();
        let rows = store
            .audit(&AuditFilter {
                agent: Some(AgentId::parse("agent-a").unwrap()),
                task: None,
                before_seq: None,
                limit: 10,
            })
            .await
            .unwrap();
        let row = serde_json::to_string(&rows[0]).unwrap();
        assert!(row.len() < 8 * 1024, "a row of {} bytes", row.len());
        assert!(rows[0].reason.starts_with("invalid arguments: xxx"));
        assert!(
            rows[0].reason.ends_with("(1048595 bytes)"),
            "{}",
            &rows[0].reason[2000..]
        );
        assert_eq!(rows[0].detail["truncated"], true);
    }
}
