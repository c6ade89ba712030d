//! Compare-and-set state changes and re-queueing after a restart.

use handoff_task::{EventKind, ExitInfo, NewEvent, TaskStatus};
use serde_json::json;

use crate::{Reopen, StatusChange};

use super::{
    ConformanceStore,
    support::{WIDE, change, event_count, insert, new_task, status_of},
};

/// `set_status` applies only from the stated, legal state; terminal tasks never change; the
/// first move to running alone sets `started_at`.
pub async fn set_status_is_compare_and_set<S: ConformanceStore>(store: S) {
    let task = insert(&store, &new_task("agent-a", 0)).await;

    // Wrong `from`: nothing changes, no event.
    let stale = change(TaskStatus::Running, TaskStatus::Completed, 10);
    assert!(store.set_status(&task.id, &stale).await.unwrap().is_none());
    assert_eq!(status_of(&store, &task.id).await, TaskStatus::Queued);
    assert_eq!(event_count(&store, &task.id).await, 1);

    // Illegal move, even though `from` matches.
    let illegal = change(TaskStatus::Queued, TaskStatus::Completed, 10);
    assert!(
        store
            .set_status(&task.id, &illegal)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(status_of(&store, &task.id).await, TaskStatus::Queued);

    let mut cancel = change(TaskStatus::Queued, TaskStatus::Cancelled, 20);
    cancel.error = Some("cancelled by agent".into());
    let cancelled = store.set_status(&task.id, &cancel).await.unwrap().unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(cancelled.completed_at, Some(20));
    assert_eq!(cancelled.started_at, None);
    assert_eq!(cancelled.error.as_deref(), Some("cancelled by agent"));

    // Terminal tasks never change, whatever the caller claims.
    for from in TaskStatus::ALL {
        let attempt = change(from, TaskStatus::Completed, 30);
        assert!(
            store
                .set_status(&task.id, &attempt)
                .await
                .unwrap()
                .is_none()
        );
    }
    let after = store.get_task(&task.id).await.unwrap().unwrap();
    assert_eq!(after, cancelled);
    assert_eq!(event_count(&store, &task.id).await, 2);

    // started_at is set only by the first move to running.
    let t2 = insert(&store, &new_task("agent-a", 0)).await;
    store.claim_next(WIDE, 100).await.unwrap().unwrap();
    store
        .set_status(
            &t2.id,
            &change(TaskStatus::Running, TaskStatus::InputRequired, 150),
        )
        .await
        .unwrap()
        .unwrap();
    let resumed = store
        .set_status(
            &t2.id,
            &change(TaskStatus::InputRequired, TaskStatus::Running, 200),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(resumed.started_at, Some(100));
    assert_eq!(resumed.completed_at, None);
}

/// `requeue` puts back only an active task still in `from`, clearing its start time and runner
/// state.
pub async fn requeue_returns_active_tasks_to_the_queue_only<S: ConformanceStore>(store: S) {
    let task = insert(&store, &new_task("a", 0)).await;
    assert!(
        store
            .requeue(&task.id, TaskStatus::Queued, 2_000, "no")
            .await
            .unwrap()
            .is_none(),
        "a queued task is not re-queued"
    );
    let claimed = store.claim_next(WIDE, 1_500).await.unwrap().unwrap();
    store
        .set_runner_state(&claimed.id, Some(&json!({"pgid": 1})))
        .await
        .unwrap();
    let back = store
        .requeue(
            &claimed.id,
            TaskStatus::Running,
            2_000,
            "re-queued: server restarted",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(back.status, TaskStatus::Queued);
    assert_eq!((back.started_at, back.runner_state), (None, None));
    let (events, _) = store.events(&claimed.id, 0, 10).await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.message, "re-queued: server restarted");
    assert_eq!(last.data, json!({"from": "running", "to": "queued"}));
    // Wrong `from`: nothing changes.
    assert!(
        store
            .requeue(&claimed.id, TaskStatus::Paused, 3_000, "no")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        store.claim_next(WIDE, 4_000).await.unwrap().unwrap().id,
        claimed.id
    );
}

/// `reopen` starts a follow-up round of a finished task only: back to the queue with its end
/// cleared, its fence counted up, its new options stored, and the status event followed by
/// the given events.
pub async fn reopen_starts_a_follow_up_round_of_a_finished_task_only<S: ConformanceStore>(
    store: S,
) {
    let task = insert(&store, &new_task("a", 0)).await;
    let claimed = store.claim_next(WIDE, 1_000).await.unwrap().unwrap();
    let mut options = claimed.options.clone();
    options.round = 2;
    let reopen = |from| Reopen {
        from,
        at: 3_000,
        options: options.clone(),
        reason: "follow-up round 2".to_owned(),
        events: vec![NewEvent::new(EventKind::Message, "and the tests too")],
    };
    assert!(
        store
            .reopen(&task.id, &reopen(TaskStatus::Running))
            .await
            .unwrap()
            .is_none(),
        "a running task is not reopened"
    );
    let change = StatusChange {
        from: TaskStatus::Running,
        to: TaskStatus::Failed,
        at: 2_000,
        exit: Some(ExitInfo {
            code: Some(1),
            signal: None,
        }),
        error: Some("boom".to_owned()),
        reason: "failed".to_owned(),
    };
    let ended = store.set_status(&task.id, &change).await.unwrap().unwrap();
    assert!(
        store
            .reopen(&task.id, &reopen(TaskStatus::Completed))
            .await
            .unwrap()
            .is_none(),
        "wrong `from`"
    );
    let back = store
        .reopen(&task.id, &reopen(TaskStatus::Failed))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(back.status, TaskStatus::Queued);
    assert_eq!(back.options.round, 2);
    assert_eq!(
        (back.started_at, back.completed_at, back.exit, &back.error),
        (None, None, None, &None)
    );
    assert!(back.fence > ended.fence);
    assert_eq!(store.get_task(&task.id).await.unwrap().unwrap(), back);
    let (events, _) = store.events(&task.id, 0, 100).await.unwrap();
    let tail: Vec<_> = events.iter().rev().take(2).rev().collect();
    assert_eq!(tail[0].message, "follow-up round 2");
    assert_eq!(
        tail[0].data,
        json!({"from": "failed", "to": "queued", "round": 2})
    );
    assert_eq!(
        (tail[1].kind, tail[1].message.as_str()),
        (EventKind::Message, "and the tests too")
    );
    assert_eq!(
        store.claim_next(WIDE, 4_000).await.unwrap().unwrap().id,
        task.id,
        "the round is claimed like any queued task"
    );
}
