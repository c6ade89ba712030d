use std::{collections::HashSet, path::PathBuf, sync::Arc};

use handoff_task::{
    AgentId, ArtifactBody, ArtifactKind, EventKind, ExitInfo, NewEvent, NewTask, TaskId,
    TaskOptions, TaskStatus,
};
use serde_json::json;
use tempfile::TempDir;

use super::SqliteStore;
use crate::{
    ClaimLimits, IdempotencyClaim, InsertOutcome, NewArtifact, StatusChange, StoreError,
    TaskFilter, TaskStore,
};

const ROOMY: u32 = 1000;
const WIDE: ClaimLimits = ClaimLimits {
    max_active: 100,
    max_active_per_agent: 100,
};

async fn open() -> (TempDir, SqliteStore) {
    let dir = TempDir::new().unwrap();
    let store = SqliteStore::open(&dir.path().join("nested/handoff.db"))
        .await
        .unwrap();
    (dir, store)
}

fn agent(name: &str) -> AgentId {
    AgentId::parse(name).unwrap()
}

fn new_task(agent_name: &str, priority: i32) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        agent_id: agent(agent_name),
        description: format!("do something for {agent_name}"),
        executor: "claude".into(),
        options: TaskOptions {
            timeout_ms: 60_000,
            requeue_on_restart: true,
            observers: vec![agent("observer-1")],
            caller_workdir: false,
            permissions: Vec::new(),
            notify: false,
            completion: None,
        },
        priority,
        workdir: "/tmp/work".into(),
        created_at: 1_000,
        idempotency_key: None,
        metadata: json!({ "ticket": 42, "tags": ["a", "b"] }),
    }
}

fn key(key: &str, not_before: i64) -> IdempotencyClaim {
    IdempotencyClaim {
        key: key.into(),
        not_before,
    }
}

fn change(from: TaskStatus, to: TaskStatus, at: i64) -> StatusChange {
    StatusChange {
        from,
        to,
        at,
        exit: None,
        error: None,
        reason: format!("{from} -> {to}"),
    }
}

async fn insert(store: &SqliteStore, task: &NewTask) -> handoff_task::Task {
    match store.insert_task(task, None, ROOMY).await.unwrap() {
        InsertOutcome::Created(t) => t,
        other => panic!("expected Created, got {other:?}"),
    }
}

async fn status_of(store: &SqliteStore, id: &TaskId) -> TaskStatus {
    store.get_task(id).await.unwrap().unwrap().status
}

async fn event_count(store: &SqliteStore, id: &TaskId) -> u64 {
    store.events(id, 0, 1000).await.unwrap().1
}

async fn claim_all(store: &SqliteStore, limits: ClaimLimits) -> Vec<TaskId> {
    let mut ids = Vec::new();
    while let Some(t) = store.claim_next(limits, 5).await.unwrap() {
        ids.push(t.id);
    }
    ids
}

#[tokio::test]
async fn insert_and_get_round_trip_every_field() {
    let (_dir, store) = open().await;
    let mut new = new_task("agent-a", 7);
    new.idempotency_key = Some("k1".into());
    let created = match store
        .insert_task(&new, Some(&key("k1", 0)), ROOMY)
        .await
        .unwrap()
    {
        InsertOutcome::Created(t) => t,
        other => panic!("{other:?}"),
    };
    let got = store.get_task(&new.id).await.unwrap().unwrap();
    assert_eq!(got, created);
    assert_eq!(got.id, new.id);
    assert_eq!(got.agent_id, new.agent_id);
    assert_eq!(got.description, new.description);
    assert_eq!(got.executor, new.executor);
    assert_eq!(got.options, new.options);
    assert_eq!(got.status, TaskStatus::Queued);
    assert_eq!(got.priority, 7);
    assert!(got.queue_seq > 0);
    assert_eq!(got.workdir, new.workdir);
    assert_eq!(got.created_at, new.created_at);
    assert_eq!(
        (got.started_at, got.completed_at, got.exit),
        (None, None, None)
    );
    assert_eq!(got.error, None);
    assert_eq!(got.idempotency_key.as_deref(), Some("k1"));
    assert_eq!(got.metadata, new.metadata);
    assert_eq!(got.runner_state, None);

    let state = json!({ "pid": 1234, "session": "s-1" });
    store.set_runner_state(&new.id, Some(&state)).await.unwrap();
    store
        .claim_next(WIDE, 2_000)
        .await
        .unwrap()
        .expect("claimable");
    let mut done = change(TaskStatus::Running, TaskStatus::Failed, 3_000);
    done.exit = Some(ExitInfo {
        code: Some(2),
        signal: None,
    });
    done.error = Some("boom".into());
    store.set_status(&new.id, &done).await.unwrap().unwrap();
    let got = store.get_task(&new.id).await.unwrap().unwrap();
    assert_eq!(got.runner_state, Some(state));
    assert_eq!(got.started_at, Some(2_000));
    assert_eq!(got.completed_at, Some(3_000));
    assert_eq!(
        got.exit,
        Some(ExitInfo {
            code: Some(2),
            signal: None
        })
    );
    assert_eq!(got.error.as_deref(), Some("boom"));
    store.set_runner_state(&new.id, None).await.unwrap();
    assert_eq!(
        store.get_task(&new.id).await.unwrap().unwrap().runner_state,
        None
    );

    let (events, total) = store.events(&new.id, 0, 10).await.unwrap();
    assert_eq!(total, 3);
    assert_eq!(events[0].seq, 1);
    assert_eq!(events[0].kind, EventKind::Status);
    assert_eq!(events[0].at, new.created_at);
    assert_eq!(events[0].data, json!({ "to": "queued" }));
    assert_eq!(events[1].data, json!({ "from": "queued", "to": "running" }));
    assert_eq!(
        events[2].data,
        json!({ "from": "running", "to": "failed", "error": "boom" })
    );
    assert_eq!(events[2].message, "running -> failed");

    assert!(
        store
            .get_task(&TaskId::generate().unwrap())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn idempotency_keys_are_per_agent_and_expire() {
    let (_dir, store) = open().await;
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

#[tokio::test]
async fn full_queue_refuses_without_capturing_the_key() {
    let (_dir, store) = open().await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_respect_capacity_and_keys() {
    let (_dir, store) = open().await;
    let store = Arc::new(store);

    let mut handles = Vec::new();
    for _ in 0..50 {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            store
                .insert_task(&new_task("agent-a", 0), None, 20)
                .await
                .unwrap()
        }));
    }
    let mut created = 0;
    for h in handles {
        match h.await.unwrap() {
            InsertOutcome::Created(_) => created += 1,
            InsertOutcome::QueueFull { queued } => assert_eq!(queued, 20),
            InsertOutcome::Existing(t) => panic!("unexpected existing {t:?}"),
        }
    }
    assert_eq!(created, 20);

    // Racing submissions of one key create exactly one task.
    let mut handles = Vec::new();
    for _ in 0..20 {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            store
                .insert_task(&new_task("agent-b", 0), Some(&key("once", 0)), ROOMY)
                .await
                .unwrap()
        }));
    }
    let mut ids = HashSet::new();
    let mut fresh = 0;
    for h in handles {
        match h.await.unwrap() {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_are_exact_and_fifo() {
    let (_dir, store) = open().await;
    let store = Arc::new(store);

    let mut handles = Vec::new();
    for i in 0..50 {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            let agent_name = format!("agent-{}", i % 5);
            match store
                .insert_task(&new_task(&agent_name, 0), None, ROOMY)
                .await
                .unwrap()
            {
                InsertOutcome::Created(t) => t,
                other => panic!("{other:?}"),
            }
        }));
    }
    let mut submitted = Vec::new();
    for h in handles {
        submitted.push(h.await.unwrap());
    }
    submitted.sort_by_key(|t| t.queue_seq);
    let seqs: HashSet<i64> = submitted.iter().map(|t| t.queue_seq).collect();
    assert_eq!(seqs.len(), 50);

    let limits = ClaimLimits {
        max_active: 2,
        max_active_per_agent: 50,
    };
    let mut handles = Vec::new();
    for _ in 0..50 {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            store.claim_next(limits, 100).await.unwrap()
        }));
    }
    let mut claimed = Vec::new();
    for h in handles {
        if let Some(t) = h.await.unwrap() {
            claimed.push(t);
        }
    }
    assert_eq!(claimed.len(), 2);
    claimed.sort_by_key(|t| t.queue_seq);
    let claimed_ids: Vec<_> = claimed.iter().map(|t| t.id.clone()).collect();
    let oldest: Vec<_> = submitted[..2].iter().map(|t| t.id.clone()).collect();
    assert_eq!(claimed_ids, oldest);
    for t in &claimed {
        assert_eq!(t.status, TaskStatus::Running);
        assert_eq!(t.started_at, Some(100));
        let (events, _) = store.events(&t.id, 0, 10).await.unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].data, json!({ "from": "queued", "to": "running" }));
    }
    assert!(store.claim_next(limits, 100).await.unwrap().is_none());

    store
        .set_status(
            &claimed[0].id,
            &change(TaskStatus::Running, TaskStatus::Completed, 200),
        )
        .await
        .unwrap()
        .unwrap();
    let next = store.claim_next(limits, 300).await.unwrap().unwrap();
    assert_eq!(next.id, submitted[2].id);
    assert!(store.claim_next(limits, 300).await.unwrap().is_none());

    let counts = store.count_by_status().await.unwrap();
    assert_eq!(
        counts,
        vec![
            (TaskStatus::Queued, 47),
            (TaskStatus::Running, 2),
            (TaskStatus::Completed, 1),
        ]
    );
}

#[tokio::test]
async fn claims_prefer_priority_and_skip_agents_at_their_limit() {
    let (_dir, store) = open().await;
    let low = insert(&store, &new_task("agent-a", 0)).await;
    let high = insert(&store, &new_task("agent-a", 5)).await;
    let claimed = claim_all(&store, WIDE).await;
    assert_eq!(claimed, vec![high.id.clone(), low.id.clone()]);

    // agent-a holds one slot (paused still counts); its next task waits, agent-b's goes.
    let (_dir, store) = open().await;
    let a1 = insert(&store, &new_task("agent-a", 0)).await;
    let a2 = insert(&store, &new_task("agent-a", 9)).await;
    let b1 = insert(&store, &new_task("agent-b", 0)).await;
    let per_agent = ClaimLimits {
        max_active: 10,
        max_active_per_agent: 1,
    };
    let first = store.claim_next(per_agent, 1).await.unwrap().unwrap();
    assert_eq!(first.id, a2.id);
    store
        .set_status(&a2.id, &change(TaskStatus::Running, TaskStatus::Paused, 2))
        .await
        .unwrap()
        .unwrap();
    let second = store.claim_next(per_agent, 3).await.unwrap().unwrap();
    assert_eq!(second.id, b1.id);
    assert!(store.claim_next(per_agent, 4).await.unwrap().is_none());
    assert_eq!(status_of(&store, &a1.id).await, TaskStatus::Queued);

    let none = ClaimLimits {
        max_active: 0,
        max_active_per_agent: 5,
    };
    assert!(store.claim_next(none, 5).await.unwrap().is_none());
}

#[tokio::test]
async fn set_status_is_compare_and_set() {
    let (_dir, store) = open().await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn appended_events_are_numbered_contiguously() {
    let (_dir, store) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let out = |i: usize| {
        NewEvent::new(EventKind::Output, format!("line {i}")).with_data(json!({ "i": i }))
    };

    let seqs = store
        .append_events(&task.id, 10, &[out(0), out(1)])
        .await
        .unwrap();
    assert_eq!(seqs, vec![2, 3]);
    let seqs = store.append_events(&task.id, 11, &[out(2)]).await.unwrap();
    assert_eq!(seqs, vec![4]);
    assert!(
        store
            .append_events(&task.id, 11, &[])
            .await
            .unwrap()
            .is_empty()
    );

    let store = Arc::new(store);
    let mut handles = Vec::new();
    for i in 0..10 {
        let (store, id) = (Arc::clone(&store), task.id.clone());
        handles.push(tokio::spawn(async move {
            store
                .append_events(&id, 20, &[out(10 + 2 * i), out(11 + 2 * i)])
                .await
                .unwrap()
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        let seqs = h.await.unwrap();
        // One call's events stay together.
        assert_eq!(seqs[1], seqs[0] + 1);
        all.extend(seqs);
    }
    all.sort_unstable();
    assert_eq!(all, (5..=24).collect::<Vec<i64>>());

    let (page, total) = store.events(&task.id, 0, 1000).await.unwrap();
    assert_eq!(total, 24);
    assert_eq!(
        page.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=24).collect::<Vec<i64>>()
    );

    let (page, total) = store.events(&task.id, 5, 3).await.unwrap();
    assert_eq!(total, 24);
    assert_eq!(
        page.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![6, 7, 8]
    );
    assert_eq!(page[0].task_id, task.id);
    let (page, _) = store.events(&task.id, 100, 3).await.unwrap();
    assert!(page.is_empty());

    let recent = store.recent_events(&task.id, 3).await.unwrap();
    assert_eq!(
        recent.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![22, 23, 24]
    );
    let first = &store.recent_events(&task.id, 100).await.unwrap()[1];
    assert_eq!(
        (first.kind, first.message.as_str(), &first.data, first.at),
        (EventKind::Output, "line 0", &json!({ "i": 0 }), 10)
    );

    let missing = TaskId::generate().unwrap();
    let err = store
        .append_events(&missing, 1, &[out(0)])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Database(_)), "{err:?}");
}

#[tokio::test]
async fn list_tasks_filters_and_pages() {
    let (_dir, store) = open().await;
    let mut ids = Vec::new();
    for i in 0..7 {
        let agent_name = if i % 2 == 0 { "agent-a" } else { "agent-b" };
        ids.push(insert(&store, &new_task(agent_name, 0)).await.id);
    }
    // The first task (agent-a) runs.
    store.claim_next(WIDE, 1).await.unwrap().unwrap();

    let all = store
        .list_tasks(&TaskFilter {
            limit: 100,
            ..TaskFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(all.next_before_seq, None);
    let newest_first: Vec<_> = ids.iter().rev().cloned().collect();
    assert_eq!(
        all.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        newest_first
    );

    // Paging by 3 visits every row exactly once, in order.
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = store
            .list_tasks(&TaskFilter {
                limit: 3,
                before_seq: cursor,
                ..TaskFilter::default()
            })
            .await
            .unwrap();
        pages += 1;
        seen.extend(page.tasks.iter().map(|t| t.id.clone()));
        match page.next_before_seq {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, newest_first);

    let only_a = store
        .list_tasks(&TaskFilter {
            agent_id: Some(agent("agent-a")),
            limit: 100,
            ..TaskFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(only_a.tasks.len(), 4);
    assert!(
        only_a
            .tasks
            .iter()
            .all(|t| t.agent_id.as_str() == "agent-a")
    );

    let a_running = store
        .list_tasks(&TaskFilter {
            agent_id: Some(agent("agent-a")),
            statuses: vec![TaskStatus::Running, TaskStatus::Paused],
            limit: 100,
            before_seq: None,
        })
        .await
        .unwrap();
    assert_eq!(
        a_running
            .tasks
            .iter()
            .map(|t| t.id.clone())
            .collect::<Vec<_>>(),
        vec![ids[0].clone()]
    );

    let b_queued_page = store
        .list_tasks(&TaskFilter {
            agent_id: Some(agent("agent-b")),
            statuses: vec![TaskStatus::Queued],
            limit: 2,
            before_seq: None,
        })
        .await
        .unwrap();
    assert_eq!(b_queued_page.tasks.len(), 2);
    assert_eq!(
        b_queued_page.next_before_seq,
        Some(b_queued_page.tasks[1].queue_seq)
    );

    let empty = store.list_tasks(&TaskFilter::default()).await.unwrap();
    assert!(empty.tasks.is_empty() && empty.next_before_seq.is_none());
}

#[tokio::test]
async fn queue_positions_counts_and_recovery_lists() {
    let (_dir, store) = open().await;
    let a = insert(&store, &new_task("agent-a", 0)).await;
    let b = insert(&store, &new_task("agent-a", 0)).await;
    let c = insert(&store, &new_task("agent-b", 3)).await;
    let d = insert(&store, &new_task("agent-b", 0)).await;

    let position = |id: TaskId| {
        let store = store.clone();
        async move { store.queue_position(&id).await.unwrap() }
    };
    assert_eq!(position(c.id.clone()).await, Some(1));
    assert_eq!(position(a.id.clone()).await, Some(2));
    assert_eq!(position(b.id.clone()).await, Some(3));
    assert_eq!(position(d.id.clone()).await, Some(4));
    assert_eq!(position(TaskId::generate().unwrap()).await, None);

    let claimed = store.claim_next(WIDE, 1).await.unwrap().unwrap();
    assert_eq!(claimed.id, c.id);
    assert_eq!(position(c.id.clone()).await, None);
    assert_eq!(position(a.id.clone()).await, Some(1));
    assert_eq!(position(d.id.clone()).await, Some(3));

    store
        .set_status(&b.id, &change(TaskStatus::Queued, TaskStatus::Cancelled, 2))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(position(d.id.clone()).await, Some(2));

    assert_eq!(
        store.count_by_status().await.unwrap(),
        vec![
            (TaskStatus::Queued, 2),
            (TaskStatus::Running, 1),
            (TaskStatus::Cancelled, 1),
        ]
    );

    let unfinished = store
        .tasks_in(&[TaskStatus::Queued, TaskStatus::Running])
        .await
        .unwrap();
    assert_eq!(
        unfinished.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        vec![a.id.clone(), c.id.clone(), d.id.clone()]
    );
    assert!(store.tasks_in(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn artifacts_are_upserted_per_kind() {
    let (_dir, store) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let output = NewArtifact {
        kind: ArtifactKind::Output,
        size: 5,
        capped: false,
        body: ArtifactBody::Inline(b"hello".to_vec()),
    };
    let log = NewArtifact {
        kind: ArtifactKind::Log,
        size: 1 << 40,
        capped: true,
        body: ArtifactBody::File(PathBuf::from("/data/artifacts/log.txt")),
    };
    store.put_artifact(&task.id, 10, &output).await.unwrap();
    store.put_artifact(&task.id, 11, &log).await.unwrap();
    let replaced = NewArtifact {
        size: 7,
        body: ArtifactBody::Inline(b"goodbye".to_vec()),
        ..output.clone()
    };
    store.put_artifact(&task.id, 12, &replaced).await.unwrap();

    let stored = store.artifacts(&task.id).await.unwrap();
    assert_eq!(stored.len(), 2);
    let out = stored
        .iter()
        .find(|a| a.kind == ArtifactKind::Output)
        .unwrap();
    assert_eq!(
        (out.size, out.capped, &out.body, out.created_at),
        (7, false, &ArtifactBody::Inline(b"goodbye".to_vec()), 12)
    );
    let log_row = stored.iter().find(|a| a.kind == ArtifactKind::Log).unwrap();
    assert_eq!(log_row.task_id, task.id);
    assert_eq!(
        (log_row.size, log_row.capped, &log_row.body),
        (1 << 40, true, &log.body)
    );
}

#[tokio::test]
async fn purge_removes_only_old_terminal_tasks_with_their_rows() {
    let (_dir, store) = open().await;
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
    let keys: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM idempotency_keys")
        .fetch_one(&store.read)
        .await
        .unwrap();
    assert_eq!(keys, 0);

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

#[tokio::test]
async fn data_survives_reopening_the_file() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("handoff.db");
    let task = new_task("agent-a", 0);
    {
        let store = SqliteStore::open(&path).await.unwrap();
        store.insert_task(&task, None, ROOMY).await.unwrap();
        store
            .append_events(&task.id, 2, &[NewEvent::new(EventKind::Log, "kept")])
            .await
            .unwrap();
        store.close().await;
    }
    {
        // Dropped without close: committed WAL frames must still be there.
        let store = SqliteStore::open(&path).await.unwrap();
        store.claim_next(WIDE, 3).await.unwrap().unwrap();
    }
    let store = SqliteStore::open(&path).await.unwrap();
    let got = store.get_task(&task.id).await.unwrap().unwrap();
    assert_eq!(got.status, TaskStatus::Running);
    assert_eq!(got.description, task.description);
    assert_eq!(event_count(&store, &task.id).await, 3);
    // Seq numbering continues after a restart.
    let seqs = store
        .append_events(&task.id, 4, &[NewEvent::new(EventKind::Log, "more")])
        .await
        .unwrap();
    assert_eq!(seqs, vec![4]);
}

#[tokio::test]
async fn corrupt_rows_are_reported_not_panicked() {
    let (_dir, store) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let other = insert(&store, &new_task("agent-a", 0)).await;

    sqlx::query("UPDATE tasks SET status = 'done' WHERE id = ?")
        .bind(task.id.as_str())
        .execute(&store.write)
        .await
        .unwrap();
    let err = store.get_task(&task.id).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt { table: "tasks", .. }),
        "{err:?}"
    );
    assert!(store.count_by_status().await.is_err());

    sqlx::query("UPDATE tasks SET options = 'not json' WHERE id = ?")
        .bind(other.id.as_str())
        .execute(&store.write)
        .await
        .unwrap();
    let err = store.get_task(&other.id).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");

    sqlx::query("UPDATE task_events SET kind = 'bogus', data = '{' WHERE task_id = ?")
        .bind(other.id.as_str())
        .execute(&store.write)
        .await
        .unwrap();
    let err = store.events(&other.id, 0, 10).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                table: "task_events",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn read_pool_refuses_writes() {
    let (_dir, store) = open().await;
    let result = sqlx::query("DELETE FROM tasks").execute(&store.read).await;
    assert!(result.is_err());
}

#[tokio::test]
async fn requeue_returns_active_tasks_to_the_queue_only() {
    let (_dir, store) = open().await;
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

#[tokio::test]
async fn input_requests_are_kept_in_order_and_go_with_the_run() {
    let (_dir, store) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let claimed = claim_all(&store, WIDE).await;
    assert_eq!(claimed, vec![task.id.clone()]);
    let ask = |id: &str, at: i64| handoff_task::PendingInput {
        task_id: task.id.clone(),
        request_id: id.to_owned(),
        request: json!({ "id": id, "title": format!("run {id}") }),
        asked_at: at,
        expires_at: at + 60_000,
    };
    store.put_input_request(&ask("second", 20)).await.unwrap();
    store.put_input_request(&ask("first", 10)).await.unwrap();
    let stored = store.input_requests(&task.id).await.unwrap();
    let ids: Vec<_> = stored.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids, ["first", "second"]);
    assert_eq!(stored[0].request["title"], "run first");
    assert_eq!(stored[0].expires_at, 60_010);

    assert!(store.delete_input_request(&task.id, "first").await.unwrap());
    assert!(!store.delete_input_request(&task.id, "first").await.unwrap());
    assert_eq!(store.input_requests(&task.id).await.unwrap().len(), 1);

    // Re-queued: the run that asked is gone.
    store
        .requeue(&task.id, TaskStatus::Running, 30, "re-queued")
        .await
        .unwrap();
    assert!(store.input_requests(&task.id).await.unwrap().is_empty());

    // Finished: nothing is left to answer.
    claim_all(&store, WIDE).await;
    store.put_input_request(&ask("third", 40)).await.unwrap();
    let done = change(TaskStatus::Running, TaskStatus::Completed, 50);
    store.set_status(&task.id, &done).await.unwrap().unwrap();
    assert!(store.input_requests(&task.id).await.unwrap().is_empty());

    store.put_input_request(&ask("fourth", 60)).await.unwrap();
    store.clear_input_requests(&task.id).await.unwrap();
    assert!(store.input_requests(&task.id).await.unwrap().is_empty());
}
