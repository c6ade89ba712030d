//! Inserting under the backlog limit and idempotency keys.

use std::{collections::HashSet, sync::Arc};

use handoff_task::{NewTask, RepeatGuard, TaskStatus};

use super::{
    ConformanceStore,
    support::{ROOMY, WIDE, change, event_count, key, new_task, race},
};
use crate::InsertOutcome;

/// `agent`'s task under a loop guard refusing the third unfinished submission of `call` within
/// 10 s, submitted at `at`.
fn guarded(agent: &str, call: &str, at: i64) -> NewTask {
    NewTask {
        created_at: at,
        repeat_guard: Some(RepeatGuard {
            key: call.into(),
            limit: 3,
            window_ms: 10_000,
        }),
        ..new_task(agent, 0)
    }
}

/// The loop guard counts only the agent's unfinished identical submissions within the window,
/// and a refused one writes nothing.
pub async fn the_repeat_guard_counts_unfinished_identical_submissions<S: ConformanceStore>(
    store: S,
) {
    let created = |outcome: InsertOutcome| match outcome {
        InsertOutcome::Created(task) => task.id,
        other => panic!("not created: {other:?}"),
    };
    let first = created(
        store
            .insert_task(&guarded("a", "x", 1_000), None, ROOMY)
            .await
            .unwrap(),
    );
    let second = created(
        store
            .insert_task(&guarded("a", "x", 2_000), None, ROOMY)
            .await
            .unwrap(),
    );
    let third = guarded("a", "x", 3_000);
    let outcome = store.insert_task(&third, None, ROOMY).await.unwrap();
    assert_eq!(
        outcome,
        InsertOutcome::Repeated {
            active: vec![first.clone(), second.clone()]
        }
    );
    assert!(store.get_task(&third.id).await.unwrap().is_none());
    assert_eq!(event_count(&store, &third.id).await, 0);

    // Another agent, another call, a call without the guard: none of them count.
    for other in [
        guarded("b", "x", 3_000),
        guarded("a", "y", 3_000),
        new_task("a", 0),
    ] {
        created(store.insert_task(&other, None, ROOMY).await.unwrap());
    }
    // A finished twin no longer counts.
    let cancel = change(TaskStatus::Queued, TaskStatus::Cancelled, 3_500);
    assert!(store.set_status(&first, &cancel).await.unwrap().is_some());
    created(
        store
            .insert_task(&guarded("a", "x", 4_000), None, ROOMY)
            .await
            .unwrap(),
    );
    // Twins older than the window do not count: `second` (2 000) is out at 12 001.
    created(
        store
            .insert_task(&guarded("a", "x", 12_001), None, ROOMY)
            .await
            .unwrap(),
    );
    let outcome = store
        .insert_task(&guarded("a", "x", 12_002), None, ROOMY)
        .await
        .unwrap();
    assert!(matches!(outcome, InsertOutcome::Repeated { active } if active.len() == 2));
}

/// An idempotency key returns the agent's existing task, belongs to one agent, and is free again
/// once expired.
pub async fn idempotency_keys_are_per_agent_and_expire<S: ConformanceStore>(store: S) {
    let first = new_task("agent-a", 0);
    let InsertOutcome::Created(first_task) = store
        .insert_task(&first, Some(&key("same", 0)), ROOMY)
        .await
        .unwrap()
    else {
        panic!("first insert");
    };

    // Same agent, same key: the original comes back and nothing new is written.
    let again = new_task("agent-a", 0);
    let outcome = store
        .insert_task(&again, Some(&key("same", 0)), ROOMY)
        .await
        .unwrap();
    assert_eq!(outcome, InsertOutcome::Existing(first_task.clone()));
    assert!(store.get_task(&again.id).await.unwrap().is_none());
    assert_eq!(event_count(&store, &first.id).await, 1);

    // Another agent's identical key is unrelated.
    let other = new_task("agent-b", 0);
    let InsertOutcome::Created(other_task) = store
        .insert_task(&other, Some(&key("same", 0)), ROOMY)
        .await
        .unwrap()
    else {
        panic!("other agent");
    };
    assert_ne!(other_task.id, first_task.id);

    // The key was stored at created_at 1000; a window starting later treats it as expired.
    let mut late = new_task("agent-a", 0);
    late.created_at = 5_000;
    let InsertOutcome::Created(late_task) = store
        .insert_task(&late, Some(&key("same", 2_000)), ROOMY)
        .await
        .unwrap()
    else {
        panic!("expired key");
    };
    assert_ne!(late_task.id, first_task.id);
    // The key now points at the new task.
    let retry = new_task("agent-a", 0);
    let outcome = store
        .insert_task(&retry, Some(&key("same", 2_000)), ROOMY)
        .await
        .unwrap();
    assert_eq!(outcome, InsertOutcome::Existing(late_task));
}

/// A full backlog refuses an insert without storing the task, its event or its key.
pub async fn full_queue_refuses_without_capturing_the_key<S: ConformanceStore>(store: S) {
    let a = new_task("agent-a", 0);
    let b = new_task("agent-a", 0);
    store.insert_task(&a, None, 2).await.unwrap();
    store.insert_task(&b, None, 2).await.unwrap();

    let refused = new_task("agent-a", 0);
    let outcome = store
        .insert_task(&refused, Some(&key("retry-me", 0)), 2)
        .await
        .unwrap();
    assert_eq!(outcome, InsertOutcome::QueueFull { queued: 2 });
    assert!(store.get_task(&refused.id).await.unwrap().is_none());
    assert_eq!(event_count(&store, &refused.id).await, 0);

    // Free a slot; the retried key must create, not return a ghost.
    store.claim_next(WIDE, 10).await.unwrap().unwrap();
    let outcome = store
        .insert_task(&refused, Some(&key("retry-me", 0)), 2)
        .await
        .unwrap();
    let InsertOutcome::Created(task) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(task.id, refused.id);
}

/// Racing inserts never overfill the backlog, and racing submissions of one key create one task.
pub async fn concurrent_inserts_respect_capacity_and_keys<S: ConformanceStore>(store: S) {
    let store = Arc::new(store);

    let outcomes = race(50, |_| {
        let store = Arc::clone(&store);
        async move {
            store
                .insert_task(&new_task("agent-a", 0), None, 20)
                .await
                .unwrap()
        }
    })
    .await;
    let mut created = 0;
    for outcome in outcomes {
        match outcome {
            InsertOutcome::Created(_) => created += 1,
            InsertOutcome::QueueFull { queued } => assert_eq!(queued, 20),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(created, 20);

    // Racing identical submissions under the loop guard: exactly the limit's worth get in.
    let outcomes = race(10, |_| {
        let store = Arc::clone(&store);
        async move {
            store
                .insert_task(&guarded("agent-c", "same", 1_000), None, ROOMY)
                .await
                .unwrap()
        }
    })
    .await;
    let mut admitted = 0;
    for outcome in outcomes {
        match outcome {
            InsertOutcome::Created(_) => admitted += 1,
            InsertOutcome::Repeated { active } => assert_eq!(active.len(), 2),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(admitted, 2);

    // Racing submissions of one key create exactly one task.
    let outcomes = race(20, |_| {
        let store = Arc::clone(&store);
        async move {
            store
                .insert_task(&new_task("agent-b", 0), Some(&key("once", 0)), ROOMY)
                .await
                .unwrap()
        }
    })
    .await;
    let mut ids = HashSet::new();
    let mut fresh = 0;
    for outcome in outcomes {
        match outcome {
            InsertOutcome::Created(t) => {
                fresh += 1;
                ids.insert(t.id);
            }
            InsertOutcome::Existing(t) => {
                ids.insert(t.id);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((fresh, ids.len()), (1, 1));
}
