//! Standing approvals and the audit log: what the caller allowed for good, and every decision.

use handoff_protocol::{
    Approval, ApprovalScope, AuditRecord, TaskId,
    tasks::{GetAuditLogOutput, ListApprovalsOutput, RevokeApprovalOutput},
};
use serde_json::{Map, Value, json};

use crate::wording::{call, count, line};

/// Approvals listed at most.
const APPROVALS_SHOWN: usize = 30;
/// Audit records listed at most.
const RECORDS_SHOWN: usize = 25;

/// `list_approvals`: one line per approval, and how to revoke one.
pub(crate) fn approvals(out: &ListApprovalsOutput, task: Option<&TaskId>) -> String {
    let scope = task.map_or_else(String::new, |t| format!(" given in task {t}"));
    if out.approvals.is_empty() {
        return format!(
            "No standing approvals{scope}: every request is judged by the rules (and asked, \
             where they ask)."
        );
    }
    let mut lines = vec![format!(
        "{}{scope}, oldest first:",
        count(
            out.approvals.len(),
            "standing approval",
            "standing approvals"
        )
    )];
    lines.extend(
        out.approvals
            .iter()
            .take(APPROVALS_SHOWN)
            .map(approval_line),
    );
    if out.approvals.len() > APPROVALS_SHOWN {
        lines.push(format!(
            "And {} more: narrow the list with list_approvals {{\"task_id\":\"…\"}}.",
            out.approvals.len() - APPROVALS_SHOWN
        ));
    }
    let revoke = call(
        "revoke_approval",
        json!({ "approval_id": out.approvals[0].id }),
    );
    lines.push(format!("Revoke one with {revoke}."));
    lines.join("\n")
}

/// `- ap_…: bash `git *` for the rest of task task_… (task scope)`
fn approval_line(approval: &Approval) -> String {
    let reach = match approval.scope {
        ApprovalScope::Task => format!("for the rest of task {}", approval.task_id),
        ApprovalScope::Project => {
            format!("in every task of project {}", line(&approval.project, 80))
        }
    };
    format!(
        "- {}: {} `{}` {reach}",
        approval.id,
        approval.permission,
        line(&approval.pattern, 120)
    )
}

/// `revoke_approval`: what is no longer allowed without the rules.
pub(crate) fn revoked(out: &RevokeApprovalOutput) -> String {
    let approval = &out.revoked;
    format!(
        "Approval {} revoked: {} `{}` ({} scope) is judged by the rules again; the next matching \
         request is allowed, asked or denied as they say.",
        approval.id,
        approval.permission,
        line(&approval.pattern, 120),
        approval.scope.as_str()
    )
}

/// `get_audit_log`: one line per decision, newest first, and where older ones start.
pub(crate) fn audit_log(out: &GetAuditLogOutput, task: Option<&TaskId>) -> String {
    let about = task.map_or_else(String::new, |t| format!(" about task {t}"));
    if out.records.is_empty() {
        return format!("No recorded decisions{about}.");
    }
    let shown = out.records.len().min(RECORDS_SHOWN);
    let mut lines = vec![format!(
        "{}{about}, newest first:",
        count(out.records.len(), "decision", "decisions")
    )];
    lines.extend(out.records.iter().take(shown).map(record_line));
    let mut page = Map::new();
    if let Some(t) = task {
        page.insert("task_id".into(), json!(t));
    }
    let before = if shown < out.records.len() {
        lines.push(format!(
            "Showing the newest {shown} of the {} on this page.",
            out.records.len()
        ));
        page.insert("limit".into(), json!(shown));
        Some(out.records[shown - 1].seq)
    } else {
        out.next_before_seq
    };
    match before {
        Some(seq) => {
            page.insert("before_seq".into(), json!(seq));
            let older = call("get_audit_log", Value::Object(page));
            lines.push(format!("Older ones: {older}."));
        }
        None => lines.push("No older ones.".to_owned()),
    }
    lines.join("\n")
}

/// `- #12 deny: executor bash (rule) — matches `rm *` [task task_…]`
fn record_line(record: &AuditRecord) -> String {
    let task = record
        .task_id
        .as_ref()
        .map_or_else(String::new, |t| format!(" [task {t}]"));
    let reason = if record.reason.is_empty() {
        String::new()
    } else {
        format!(" — {}", line(&record.reason, 160))
    };
    format!(
        "- #{} {}: {} {} (by {}){reason}{task}",
        record.seq,
        record.outcome,
        record.source,
        line(&record.subject, 60),
        record.stage
    )
}
