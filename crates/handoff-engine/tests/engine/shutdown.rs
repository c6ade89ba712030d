//! Claims against a stopping engine and against a cancel: a task caught between its claim and
//! its run must still end truthfully, and its run must never go on unsupervised.

use std::{pin::pin, sync::Arc};

use handoff_engine::SubmitRequest;
use handoff_protocol::{TaskNotice, tasks::ControlAction};
use handoff_runner::Capabilities;
use handoff_store::SqliteStore;
use handoff_task::{TaskId, TaskStatus};
use serde_json::json;

use super::{
    gated::{GatedStore, Gates},
    rig::{Rig, Trail, rig, rig_with, settings, step, until_event},
    scripted::{Call, Kind},
};

/// An engine whose claims are held.
async fn gated_rig() -> (Rig, Gates) {
    let dir = tempfile::tempdir().unwrap();
    let config = Arc::new(settings(&dir, &[]));
    let store = SqliteStore::open(&config.database_path()).await.unwrap();
    let (store, gates) = GatedStore::new(store);
    gates.hold_claims();
    let rig = rig_with(dir, config, store, Capabilities::default()).await;
    (rig, gates)
}

fn task(requeue_on_restart: bool) -> SubmitRequest {
    SubmitRequest {
        requeue_on_restart: Some(requeue_on_restart),
        ..unsaid()
    }
}

/// A task that does not say whether it re-queues.
fn unsaid() -> SubmitRequest {
    SubmitRequest {
        description: "do the work".to_owned(),
        ..SubmitRequest::default()
    }
}

/// Shuts the engine down while the executor of a claimed task is still starting.
async fn shut_down_while_starting(requeue: bool) -> (Rig, TaskId, Trail, Vec<TaskNotice>) {
    shut_down_while_starting_with(&[], task(requeue)).await
}

/// [`shut_down_while_starting`] with settings `env`, for the task `submitted`.
async fn shut_down_while_starting_with(
    env: &[(&str, &str)],
    submitted: SubmitRequest,
) -> (Rig, TaskId, Trail, Vec<TaskNotice>) {
    let mut rig = rig(env, Capabilities::default()).await;
    rig.script.calls.hold(Kind::Start);
    let id = rig.submit(submitted).await;
    let start = rig.script.calls.next().await;
    assert_eq!(start.call, Call::Start(id.clone()));
    let mut trail = Trail::new(&id);
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Running,
            None,
            &["status: queued", "status: running"]
        )
    );
    let mut notices = rig.engine.subscribe();

    let engine = rig.engine.clone();
    let mut shutdown = pin!(engine.shutdown());
    // One poll tells every supervisor to stop; then it waits for the runs.
    assert!(futures::poll!(shutdown.as_mut()).is_pending());
    start.release();
    let mut run = rig.script.next_run().await;
    assert_eq!(run.calls.next().await.call, Call::Cancel, "stopped at once");
    shutdown.await;
    let mut seen = Vec::new();
    while let Ok(notice) = notices.try_recv() {
        if notice.task() == &id {
            seen.push(notice);
        }
    }
    (rig, id, trail, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_while_the_executor_starts_fails_the_task() {
    let (rig, id, mut trail, notices) = shut_down_while_starting(false).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Failed,
            Some("interrupted: server shut down"),
            &["status: interrupted: server shut down"]
        )
    );
    assert!(notices.contains(&TaskNotice::Status(id.clone(), TaskStatus::Failed)));
    assert_eq!(
        rig.script.calls.log(),
        [
            Call::Start(id.clone()),
            Call::Release(json!({ "fake": id.as_str() }))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_while_the_executor_starts_requeues_a_task_that_opted_in() {
    let (rig, id, mut trail, notices) = shut_down_while_starting(true).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Queued,
            None,
            &["status: re-queued: server shut down"]
        )
    );
    assert!(
        notices.contains(&TaskNotice::Status(id.clone(), TaskStatus::Queued)),
        "the re-queue was never published: {notices:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_does_not_say_follows_the_servers_requeue_setting() {
    let setting = [("HANDOFF_REQUEUE_ON_RESTART", "true")];
    let (rig, _, mut trail, _) = shut_down_while_starting_with(&setting, unsaid()).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Queued,
            None,
            &["status: re-queued: server shut down"]
        )
    );
    // Its own word wins over the setting.
    let (rig, _, mut trail, _) = shut_down_while_starting_with(&setting, task(false)).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Failed,
            Some("interrupted: server shut down"),
            &["status: interrupted: server shut down"]
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_during_a_claim_stops_the_claimed_run() {
    let (mut rig, mut gates) = gated_rig().await;
    let id = rig.submit(task(false)).await;
    let (claimed, release) = gates.next_claim().await;
    assert_eq!(claimed, id);

    let engine = rig.engine.clone();
    let mut shutdown = pin!(engine.shutdown());
    assert!(
        futures::poll!(shutdown.as_mut()).is_pending(),
        "the shutdown must wait for the run being claimed"
    );
    drop(release);
    shutdown.await;
    rig.until_done(&id).await;
    let mut trail = Trail::new(&id);
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Failed,
            Some("interrupted: server shut down"),
            &[
                "status: queued",
                "status: running",
                "status: interrupted: server shut down"
            ]
        )
    );
    // Nothing of the run may go on after the shutdown: never started, or stopped.
    let started = rig.script.calls.log().contains(&Call::Start(id.clone()));
    if started {
        let mut run = rig.script.next_run().await;
        assert_eq!(run.calls.next().await.call, Call::Cancel);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_a_claim_keeps_the_run_from_starting() {
    let (mut rig, mut gates) = gated_rig().await;
    let id = rig.submit(task(false)).await;
    let (_, release) = gates.next_claim().await;
    let receipt = rig
        .control(&id, ControlAction::Cancel, "stop")
        .await
        .unwrap()
        .unwrap();
    assert!(receipt.changed, "{}", receipt.message);
    let mut trail = Trail::new(&id);
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Cancelled,
            Some("cancelled: stop"),
            &[
                "status: queued",
                "status: running",
                "control: cancel: stop",
                "status: cancelled: stop"
            ]
        )
    );

    drop(release);
    tokio::select! {
        () = until_event(&rig.engine, &id, |e| e.message.starts_with("not started")) => {}
        call = rig.script.calls.next() => panic!("the run of a cancelled task began: {:?}", call.call),
    }
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Cancelled,
            Some("cancelled: stop"),
            &["log: not started: the task was cancelled while it was being claimed"]
        )
    );
    assert!(rig.script.calls.log().is_empty());
}

/// The other order: the cancel found no supervisor, but the run was set up (and its executor
/// started) before the cancel was written. The cancel must still reach the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_written_after_the_run_was_set_up_stops_it() {
    let (mut rig, mut gates) = gated_rig().await;
    gates.hold_cancels();
    let id = rig.submit(task(false)).await;
    let (_, claim) = gates.next_claim().await;
    let cancel = rig.control(&id, ControlAction::Cancel, "stop");
    let (_, write) = gates.next_cancel().await;
    drop(claim);
    let mut run = rig.script.next_run().await;
    drop(write);
    assert_eq!(run.calls.next().await.call, Call::Cancel);
    let receipt = cancel.await.unwrap().unwrap();
    assert!(receipt.changed, "{}", receipt.message);
    assert_eq!(
        Trail::new(&id).step(&rig.engine).await,
        step(
            TaskStatus::Cancelled,
            Some("cancelled: stop"),
            &[
                "status: queued",
                "status: running",
                "control: cancel: stop",
                "status: cancelled: stop"
            ]
        )
    );
}
