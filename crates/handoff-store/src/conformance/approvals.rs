//! Standing approvals and the audit trail of permission decisions.

use handoff_task::{Approval, ApprovalScope, TaskId};

use super::{
    ConformanceStore,
    support::{agent, approval, audit_record},
};
use crate::AuditFilter;

/// The trait promises no order for approvals, so cases compare them sorted.
fn by_id(mut approvals: Vec<Approval>) -> Vec<Approval> {
    approvals.sort_by(|a, b| a.id.cmp(&b.id));
    approvals
}

/// A task may use its own task-scope approvals and its agent's for its project; listing is per
/// agent (optionally per task given in); only the owning agent revokes, once.
pub async fn approvals_reach_their_task_or_project_and_revoke_per_agent<S: ConformanceStore>(
    store: S,
) {
    let (t1, t2) = (TaskId::generate().unwrap(), TaskId::generate().unwrap());
    let own = approval(1, "agent-a", ApprovalScope::Task, &t1, "p1");
    let project = approval(2, "agent-a", ApprovalScope::Project, &t2, "p1");
    let other_task = approval(3, "agent-a", ApprovalScope::Task, &t2, "p1");
    let other_project = approval(4, "agent-a", ApprovalScope::Project, &t1, "p2");
    let other_agent = approval(5, "agent-b", ApprovalScope::Project, &t1, "p1");
    for a in [&own, &project, &other_task, &other_project, &other_agent] {
        store.insert_approval(a).await.unwrap();
    }
    let a = agent("agent-a");

    let usable = store.approvals_for_task(&a, &t1, "p1").await.unwrap();
    assert_eq!(by_id(usable), vec![own.clone(), project.clone()]);
    assert_eq!(
        by_id(store.list_approvals(&a, None).await.unwrap()),
        vec![
            own.clone(),
            project.clone(),
            other_task.clone(),
            other_project.clone()
        ]
    );
    // "Given in the task", whatever the scope.
    assert_eq!(
        by_id(store.list_approvals(&a, Some(&t1)).await.unwrap()),
        vec![own.clone(), other_project.clone()]
    );
    assert_eq!(
        store.list_approvals(&agent("agent-b"), None).await.unwrap(),
        vec![other_agent]
    );

    // An id alone does not let another agent remove it.
    assert_eq!(
        store
            .revoke_approval(&agent("agent-b"), &own.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.revoke_approval(&a, &own.id).await.unwrap(),
        Some(own.clone())
    );
    assert_eq!(store.revoke_approval(&a, &own.id).await.unwrap(), None);
    assert_eq!(
        store.approvals_for_task(&a, &t1, "p1").await.unwrap(),
        vec![project]
    );
}

/// Audit records get growing sequence numbers and read back whole, newest first, per agent and
/// optionally per task, paged by `before_seq` and `limit`.
pub async fn audit_reads_newest_first_per_agent_and_task<S: ConformanceStore>(store: S) {
    let (t1, t2) = (TaskId::generate().unwrap(), TaskId::generate().unwrap());
    let mut stored = Vec::new();
    for i in 0..5 {
        let task = if i % 2 == 0 { &t1 } else { &t2 };
        let mut record = audit_record(i * 10, "agent-a", Some(task));
        record.seq = store.append_audit(&record).await.unwrap();
        stored.push(record);
    }
    assert!(stored.windows(2).all(|w| w[0].seq < w[1].seq));
    let mut other = audit_record(100, "agent-b", None);
    other.seq = store.append_audit(&other).await.unwrap();
    let mut anonymous = audit_record(110, "agent-a", None);
    anonymous.agent_id = None;
    store.append_audit(&anonymous).await.unwrap();

    let filter = |task: Option<&TaskId>, before_seq: Option<i64>, limit: u32| AuditFilter {
        agent: Some(agent("agent-a")),
        task: task.cloned(),
        before_seq,
        limit,
    };
    let newest_first: Vec<_> = stored.iter().rev().cloned().collect();
    assert_eq!(
        store.audit(&filter(None, None, 100)).await.unwrap(),
        newest_first
    );
    let of_t1: Vec<_> = newest_first
        .iter()
        .filter(|r| r.task_id.as_ref() == Some(&t1))
        .cloned()
        .collect();
    assert_eq!(of_t1.len(), 3);
    assert_eq!(
        store.audit(&filter(Some(&t1), None, 100)).await.unwrap(),
        of_t1
    );

    let page = store.audit(&filter(None, None, 2)).await.unwrap();
    assert_eq!(page, newest_first[..2]);
    let next = store
        .audit(&filter(None, Some(page[1].seq), 2))
        .await
        .unwrap();
    assert_eq!(next, newest_first[2..4]);

    let of_b = AuditFilter {
        agent: Some(agent("agent-b")),
        task: None,
        before_seq: None,
        limit: 100,
    };
    assert_eq!(store.audit(&of_b).await.unwrap(), vec![other.clone()]);

    // Every agent's records on one task (an operator's view), and with no filter every record.
    let mut on_t1 = audit_record(120, "agent-b", Some(&t1));
    on_t1.seq = store.append_audit(&on_t1).await.unwrap();
    let any_agent = |task: Option<&TaskId>| AuditFilter {
        agent: None,
        task: task.cloned(),
        before_seq: None,
        limit: 100,
    };
    let mut whole_t1 = vec![on_t1.clone()];
    whole_t1.extend(of_t1);
    assert_eq!(store.audit(&any_agent(Some(&t1))).await.unwrap(), whole_t1);
    assert_eq!(store.audit(&any_agent(None)).await.unwrap().len(), 8);
}

/// An audit record of any size is stored cut down to a bounded row: its texts clipped, with
/// their full length noted, and its detail marked truncated.
pub async fn a_huge_audit_record_is_stored_as_a_bounded_row<S: ConformanceStore>(store: S) {
    let huge = "x".repeat(1 << 20);
    let mut record = audit_record(1, "agent-a", None);
    record.subject = huge.clone();
    record.reason = format!("invalid arguments: {huge}");
    record.detail = serde_json::json!({ "arguments": huge });
    store.append_audit(&record).await.unwrap();
    let rows = store
        .audit(&AuditFilter {
            agent: Some(agent("agent-a")),
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
