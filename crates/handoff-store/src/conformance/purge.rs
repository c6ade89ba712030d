//! Purging finished tasks and everything stored with them.

use handoff_task::{ApprovalScope, ArtifactBody, ArtifactKind, EventKind, NewEvent, TaskStatus};

use super::{
    ConformanceStore,
    support::{
        ROOMY, WIDE, agent, approval, audit_record, change, event_count, insert, key, new_task,
    },
};
use crate::{AuditFilter, InsertOutcome, NewArtifact};

/// Purging removes only terminal tasks completed before the cutoff, with their events, artifacts
/// and keys, at most `limit` per call.
pub async fn purge_removes_only_old_terminal_tasks_with_their_rows<S: ConformanceStore>(store: S) {
    let mut old = new_task("agent-a", 0);
    old.idempotency_key = Some("old".into());
    store
        .insert_task(&old, Some(&key("old", 0)), ROOMY)
        .await
        .unwrap();
    let recent = insert(&store, &new_task("agent-a", 0)).await;
    let running = insert(&store, &new_task("agent-a", 0)).await;
    let queued = insert(&store, &new_task("agent-a", 0)).await;

    store
        .set_status(
            &old.id,
            &change(TaskStatus::Queued, TaskStatus::Cancelled, 100),
        )
        .await
        .unwrap()
        .unwrap();
    store
        .set_status(
            &recent.id,
            &change(TaskStatus::Queued, TaskStatus::Failed, 900),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store.claim_next(WIDE, 50).await.unwrap().unwrap().id,
        running.id
    );
    store
        .append_events(&old.id, 100, &[NewEvent::new(EventKind::Log, "note")])
        .await
        .unwrap();
    store
        .put_artifact(
            &old.id,
            100,
            &NewArtifact {
                kind: ArtifactKind::Output,
                size: 1,
                capped: false,
                body: ArtifactBody::Inline(vec![1]),
            },
        )
        .await
        .unwrap();

    let purged = store.purge_terminal(500, 10).await.unwrap();
    assert_eq!(purged.len(), 1);
    assert_eq!(purged[0].id, old.id);
    assert_eq!(purged[0].status, TaskStatus::Cancelled);

    assert!(store.get_task(&old.id).await.unwrap().is_none());
    assert_eq!(event_count(&store, &old.id).await, 0);
    assert!(store.artifacts(&old.id).await.unwrap().is_empty());
    for id in [&recent.id, &running.id, &queued.id] {
        assert!(store.get_task(id).await.unwrap().is_some());
    }
    // The portable view of "its key went with it"; stores check their own rows separately.
    assert!(
        store
            .find_idempotent(&agent("agent-a"), &key("old", 0))
            .await
            .unwrap()
            .is_none()
    );

    // The purged key is free again.
    let reuse = new_task("agent-a", 0);
    let outcome = store
        .insert_task(&reuse, Some(&key("old", 0)), ROOMY)
        .await
        .unwrap();
    assert!(matches!(outcome, InsertOutcome::Created(_)), "{outcome:?}");

    // The limit bounds one call.
    assert_eq!(store.purge_terminal(10_000, 0).await.unwrap().len(), 0);
    assert_eq!(store.purge_terminal(10_000, 10).await.unwrap().len(), 1);
}

/// Purging a task takes its task-scope approvals and the audit records older than the cutoff;
/// a project approval given in it stays.
pub async fn purge_takes_task_approvals_and_old_audit<S: ConformanceStore>(store: S) {
    let old = insert(&store, &new_task("agent-a", 0)).await;
    store
        .set_status(
            &old.id,
            &change(TaskStatus::Queued, TaskStatus::Cancelled, 100),
        )
        .await
        .unwrap()
        .unwrap();
    let for_task = approval(1, "agent-a", ApprovalScope::Task, &old.id, "p1");
    let for_project = approval(2, "agent-a", ApprovalScope::Project, &old.id, "p1");
    store.insert_approval(&for_task).await.unwrap();
    store.insert_approval(&for_project).await.unwrap();
    store
        .append_audit(&audit_record(50, "agent-a", Some(&old.id)))
        .await
        .unwrap();
    let mut late = audit_record(600, "agent-a", Some(&old.id));
    late.seq = store.append_audit(&late).await.unwrap();

    let purged = store.purge_terminal(500, 10).await.unwrap();
    assert_eq!(
        purged.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        vec![old.id.clone()]
    );
    assert_eq!(
        store.list_approvals(&agent("agent-a"), None).await.unwrap(),
        vec![for_project]
    );
    let all = AuditFilter {
        agent: Some(agent("agent-a")),
        task: None,
        before_seq: None,
        limit: 100,
    };
    assert_eq!(store.audit(&all).await.unwrap(), vec![late]);
}
