use std::time::Duration;

use handoff_engine::{EngineError, SubmitRequest};
use handoff_task::TaskStatus;

use super::common::{Harness, PATIENCE, agent, as_agent, script, start, wait_until};

/// A script that waits until the gate file exists.
fn gated(gate: &std::path::Path, then: &str) -> String {
    format!(
        "while [ ! -e '{}' ]; do sleep 0.02; done; {then}",
        gate.display()
    )
}

async fn counts(h: &Harness) -> (u64, u64) {
    let counts = h.engine.counts().await.unwrap();
    let of = |s: TaskStatus| counts.iter().find(|(x, _)| *x == s).map_or(0, |(_, n)| *n);
    (of(TaskStatus::Running), of(TaskStatus::Queued))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_submissions_with_a_limit_of_two() {
    let h = start(&[("HANDOFF_MAX_CONCURRENT_TASKS", "2")]).await;
    let gate = h.dir.path().join("gate");
    let mut joins = Vec::new();
    for i in 0..50 {
        let engine = h.engine.clone();
        let text = gated(&gate, &format!("echo task {i}"));
        joins.push(tokio::spawn(async move {
            engine.submit(&agent("a"), script(&text)).await.unwrap()
        }));
    }
    let mut ids = Vec::new();
    for join in joins {
        ids.push(join.await.unwrap().task.id);
    }
    // Two admitted, the other 48 left waiting. A third admitted later by a scheduler pass
    // still pending would wait behind the gate as well, counted by the looks below.
    assert_eq!(
        wait_until("two running, 48 queued", PATIENCE, async || {
            let seen = counts(&h).await;
            if seen.0 >= 2 { Ok(seen) } else { Err(seen) }
        })
        .await,
        (2, 48)
    );

    std::fs::write(&gate, "").unwrap();
    let mut max_running = 0;
    wait_until("the queue to drain", PATIENCE, async || {
        let (running, queued) = counts(&h).await;
        max_running = max_running.max(running);
        if running == 0 && queued == 0 {
            Ok(())
        } else {
            Err((running, queued))
        }
    })
    .await;
    assert!(max_running <= 2, "saw {max_running} running");

    let mut tasks = Vec::new();
    for id in &ids {
        let task = h.wait_done("a", id).await;
        assert_eq!(task.status, TaskStatus::Completed);
        tasks.push(task);
    }
    // FIFO: tasks started in submission order.
    tasks.sort_by_key(|t| t.queue_seq);
    for pair in tasks.windows(2) {
        assert!(
            pair[0].started_at <= pair[1].started_at,
            "task {} started after {}",
            pair[0].queue_seq,
            pair[1].queue_seq
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn higher_priority_runs_first() {
    let h = start(&[("HANDOFF_MAX_CONCURRENT_TASKS", "1")]).await;
    let gate = h.dir.path().join("gate");
    let blocker = h.submit("a", &gated(&gate, "true")).await.task.id;
    h.wait_status("a", &blocker, TaskStatus::Running).await;
    let low = h.submit("a", "true").await;
    let high = h
        .engine
        .submit(
            &agent("a"),
            SubmitRequest {
                priority: Some(5),
                ..script("true")
            },
        )
        .await
        .unwrap();
    assert_eq!(low.queue_position, Some(1));
    assert_eq!(high.queue_position, Some(1), "jumps ahead of the low one");
    std::fs::write(&gate, "").unwrap();
    let low = h.wait_done("a", &low.task.id).await;
    let high = h.wait_done("a", &high.task.id).await;
    assert!(high.started_at <= low.started_at);
    assert!(high.queue_seq > low.queue_seq);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_agent_limit_lets_other_agents_through() {
    let h = start(&[
        ("HANDOFF_MAX_CONCURRENT_TASKS", "10"),
        ("HANDOFF_MAX_CONCURRENT_PER_AGENT", "1"),
    ])
    .await;
    let gate = h.dir.path().join("gate");
    let x1 = h.submit("x", &gated(&gate, "true")).await.task.id;
    let x2 = h.submit("x", &gated(&gate, "true")).await.task.id;
    let y1 = h.submit("y", &gated(&gate, "true")).await.task.id;
    h.wait_status("x", &x1, TaskStatus::Running).await;
    // y1 queued behind x2 and the claims go in queue order: y1 running proves the scheduler
    // looked at x2 and passed it over for x's limit (nothing since can change that answer).
    h.wait_status("y", &y1, TaskStatus::Running).await;
    let status = h.engine.status(&as_agent(&agent("x")), &x2).await.unwrap();
    assert_eq!(status.task.status, TaskStatus::Queued);
    assert_eq!(status.queue_position, Some(1));
    std::fs::write(&gate, "").unwrap();
    for (who, id) in [("x", &x1), ("x", &x2), ("y", &y1)] {
        assert_eq!(h.wait_done(who, id).await.status, TaskStatus::Completed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_keys_are_per_agent() {
    let h = start(&[]).await;
    let keyed = |text: &str| SubmitRequest {
        idempotency_key: Some("fix-bug-1".into()),
        ..script(text)
    };
    let first = h.engine.submit(&agent("a"), keyed("true")).await.unwrap();
    let again = h.engine.submit(&agent("a"), keyed("true")).await.unwrap();
    assert!(first.created);
    assert!(!again.created);
    assert_eq!(first.task.id, again.task.id);
    let other = h.engine.submit(&agent("b"), keyed("true")).await.unwrap();
    assert!(other.created);
    assert_ne!(other.task.id, first.task.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_an_error_and_captures_no_key() {
    let h = start(&[
        ("HANDOFF_MAX_CONCURRENT_TASKS", "1"),
        ("HANDOFF_MAX_QUEUED_TASKS", "2"),
    ])
    .await;
    let gate = h.dir.path().join("gate");
    let running = h.submit("a", &gated(&gate, "true")).await.task.id;
    h.wait_status("a", &running, TaskStatus::Running).await;
    h.submit("a", "true").await;
    h.submit("a", "true").await;
    let keyed = SubmitRequest {
        idempotency_key: Some("k".into()),
        ..script("true")
    };
    match h.engine.submit(&agent("a"), keyed.clone()).await {
        Err(EngineError::QueueFull {
            queued,
            retry_after,
        }) => {
            assert_eq!(queued, 2);
            assert!(retry_after > Duration::ZERO);
        }
        other => panic!("{other:?}"),
    }
    std::fs::write(&gate, "").unwrap();
    h.wait_done("a", &running).await;
    let accepted = wait_until(
        "the queue to take the keyed task",
        PATIENCE,
        async || match h.engine.submit(&agent("a"), keyed.clone()).await {
            Err(EngineError::QueueFull { queued, .. }) => Err(queued),
            other => Ok(other.unwrap()),
        },
    )
    .await;
    assert!(accepted.created, "the refused key was not captured");
}
