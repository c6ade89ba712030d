//! Storing, reading and listing tasks.

use handoff_task::{EventKind, ExitInfo, TaskId, TaskStatus};
use serde_json::json;

use super::{
    ConformanceStore,
    support::{ROOMY, WIDE, agent, change, insert, key, new_task},
};
use crate::{InsertOutcome, TaskFilter};

/// Every field of a task survives insert, claim, a terminal move and runner-state updates, and
/// each move leaves its status event.
pub async fn insert_and_get_round_trip_every_field<S: ConformanceStore>(store: S) {
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
    // A task that takes a pooled agent's directory.
    store.set_workdir(&new.id, "/w/pool-1-a").await.unwrap();
    assert_eq!(
        store.get_task(&new.id).await.unwrap().unwrap().workdir,
        "/w/pool-1-a"
    );
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

/// `list_tasks` returns newest first, filters by agent and state, and pages by `before_seq`
/// without gaps or repeats.
pub async fn list_tasks_filters_and_pages<S: ConformanceStore>(store: S) {
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
            text: None,
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
            text: None,
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

/// A text filter keeps the tasks whose description contains it in any case, treats `%`, `_`
/// and `\` as themselves, and pages like the unfiltered list.
pub async fn list_tasks_filters_by_description_text<S: ConformanceStore>(store: S) {
    let descriptions = [
        "Fix the LOGIN page",
        "write docs",
        "fix the login API",
        "raise coverage to 100%",
        "rename snake_case names",
        "100 percent done",
        "path a\\b",
        "fix login once more",
    ];
    let mut ids = Vec::new();
    for description in descriptions {
        let mut task = new_task("agent-a", 0);
        task.description = description.to_owned();
        ids.push(insert(&store, &task).await.id);
    }
    let matching = |text: &str, limit: u32, before_seq: Option<i64>| {
        let filter = TaskFilter {
            limit,
            before_seq,
            text: Some(text.to_owned()),
            ..TaskFilter::default()
        };
        let store = store.clone();
        async move { store.list_tasks(&filter).await.unwrap() }
    };
    let listed =
        |page: &crate::TaskPage| page.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();

    let login = matching("Fix the login", 100, None).await;
    assert_eq!(listed(&login), vec![ids[2].clone(), ids[0].clone()]);
    assert_eq!(
        listed(&matching("100%", 100, None).await),
        vec![ids[3].clone()]
    );
    assert_eq!(
        listed(&matching("e_c", 100, None).await),
        vec![ids[4].clone()]
    );
    assert_eq!(
        listed(&matching("a\\b", 100, None).await),
        vec![ids[6].clone()]
    );
    assert_eq!(
        listed(&matching("%", 100, None).await),
        vec![ids[3].clone()]
    );
    assert!(
        matching("nothing like it", 100, None)
            .await
            .tasks
            .is_empty()
    );

    // Paged by one: every match once, newest first, then no cursor.
    let first = matching("LOGIN", 1, None).await;
    assert_eq!(listed(&first), vec![ids[7].clone()]);
    let second = matching("LOGIN", 1, first.next_before_seq).await;
    assert_eq!(listed(&second), vec![ids[2].clone()]);
    let third = matching("LOGIN", 1, second.next_before_seq).await;
    assert_eq!(listed(&third), vec![ids[0].clone()]);
    assert_eq!(third.next_before_seq, None);

    // With a state filter too: only the claimed (first) task runs.
    store.claim_next(WIDE, 1).await.unwrap().unwrap();
    let running = store
        .list_tasks(&TaskFilter {
            statuses: vec![TaskStatus::Running],
            limit: 100,
            text: Some("login".to_owned()),
            ..TaskFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(listed(&running), vec![ids[0].clone()]);
}

/// Queue positions follow claim order, counts group by state, and `tasks_in` lists oldest first.
pub async fn queue_positions_counts_and_recovery_lists<S: ConformanceStore>(store: S) {
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

/// A task's result delivery is unset until marked; the first mark stays.
pub async fn the_first_result_delivery_is_kept<S: ConformanceStore>(store: S) {
    let id = insert(&store, &new_task("agent-a", 0)).await.id;
    let delivered_at = async |store: &S| {
        store
            .get_task(&id)
            .await
            .unwrap()
            .unwrap()
            .result_delivered_at
    };
    assert_eq!(delivered_at(&store).await, None);
    store.mark_result_delivered(&id, 5_000).await.unwrap();
    assert_eq!(delivered_at(&store).await, Some(5_000));
    store.mark_result_delivered(&id, 9_000).await.unwrap();
    assert_eq!(delivered_at(&store).await, Some(5_000));
}
