//! A task's deadline holds also for an agent that ignores SIGTERM: the cancel grace is counted
//! inside the deadline, not added to it.

use handoff_task::TaskStatus;

use super::common::{agent, alive, script, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grace_is_counted_inside_the_deadline() {
    let h = start(&[("HANDOFF_CANCEL_GRACE_MS", "8000")]).await;
    let mut request = script("trap 'echo term' TERM; echo started; while :; do sleep 0.05; done");
    request.timeout_ms = Some(10_000);
    let id = h.engine.submit(&agent("a"), request).await.unwrap().task.id;
    let pid = h.pid("a", &id).await;
    let task = h.wait_done("a", &id).await;
    assert_eq!(task.status, TaskStatus::Timeout);
    assert_eq!(task.error.as_deref(), Some("timed out after 10000ms"));
    assert!(!alive(pid), "the timed-out process group must be gone");
    // It was asked politely first, and killed at the deadline, not a grace (8 s) after it:
    // the bound lies halfway between the two, far from either on a loaded machine.
    assert!(h.outputs("a", &id).await.contains(&"term".to_owned()));
    let took = task.completed_at.unwrap() - task.started_at.unwrap();
    assert!(took < 14_000, "a 10 s deadline ended after {took} ms");
}

/// A second shutdown signal cuts the grace short: the runs are killed at once and their final
/// states recorded before a client's SIGKILL arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_runs_now_skips_the_grace() {
    let h = start(&[("HANDOFF_CANCEL_GRACE_MS", "60000")]).await;
    let id = h
        .submit(
            "a",
            "trap 'echo term' TERM; echo started; while :; do sleep 0.05; done",
        )
        .await
        .task
        .id;
    let pid = h.pid("a", &id).await;
    h.wait_output("a", &id, |l| l == "started").await;
    let engine = h.engine.clone();
    let shutdown = tokio::spawn(async move { engine.shutdown().await });
    // The polite stop reached the run and was ignored; now the server must stop.
    h.wait_output("a", &id, |l| l == "term").await;
    h.engine.stop_runs_now().await;
    tokio::time::timeout(std::time::Duration::from_secs(20), shutdown)
        .await
        .expect("shutdown still waits for the 60 s grace")
        .unwrap();
    let task = h
        .engine
        .status(&super::common::as_agent(&agent("a")), &id)
        .await
        .unwrap()
        .task;
    assert_eq!(task.status, TaskStatus::Failed);
    assert_eq!(task.error.as_deref(), Some("interrupted: server shut down"));
    assert!(!alive(pid));
}
