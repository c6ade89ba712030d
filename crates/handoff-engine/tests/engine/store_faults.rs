//! A store that fails for a while (a full disk) must not leave a task `running` for good: the
//! run stays supervised, and its final state is written once writes work again. A heartbeat
//! that stalls (a slow write, a suspended machine) must not make the instance stop its runs.

use handoff_store::{SqliteStore, TaskStore};
use handoff_task::{MessageType, TaskId, TaskStatus, unix_millis_now};

use super::{
    common::{Harness, agent, as_agent, config, start_on},
    gated::{GatedStore, Gates},
};

/// An engine on a gated SQLite store, with extra settings `env`, running a task that printed
/// `one` and waits for a line on its stdin (the message [`go`] sends).
async fn waiting_run(env: &[(&str, &str)]) -> (Harness, Gates, SqliteStore, TaskId) {
    let dir = tempfile::tempdir().unwrap();
    let mut env = env.to_vec();
    env.push(("HANDOFF_COMPLETION_POLICY", "none"));
    let sqlite = SqliteStore::open(&config(&dir, &env).database_path())
        .await
        .unwrap();
    let (store, gates) = GatedStore::new(sqlite.clone());
    let h = start_on(dir, &env, store).await;
    let id = h
        .submit("a", "echo one; read -t 30 line; echo two")
        .await
        .task
        .id;
    h.wait_output("a", &id, |line| line == "one").await;
    (h, gates, sqlite, id)
}

/// Sends the waiting run its line.
async fn go(h: &Harness, id: &TaskId) -> Result<(), handoff_engine::EngineError> {
    h.engine
        .message(
            &as_agent(&agent("a")),
            id,
            MessageType::Update,
            "go".to_owned(),
            None,
        )
        .await
        .map(|_| ())
}

// After a failed commit every later write failed until a restart, and running tasks stayed
// `running` forever; with writes back, the task must reach its final state without one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_outlives_failing_writes_and_settles_once_they_work() {
    let (h, gates, sqlite, id) = waiting_run(&[]).await;

    gates.fail_writes(true);
    // The line reaches the process (which then ends); recording the message fails.
    let recorded = go(&h, &id).await;
    assert!(recorded.is_err());
    // The run ends while nothing can be written; its final state waits in the driver's
    // retries — more of them than the five that used to be all.
    gates
        .until("the driver gave up settling the task", |g| {
            g.refused_status_changes() >= 6
        })
        .await;
    let task = sqlite.get_task(&id).await.unwrap().unwrap();
    assert_eq!(task.status, TaskStatus::Running, "nothing could be written");

    gates.fail_writes(false);
    let task = h.wait_done("a", &id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{:?}", task.error);
}

// An instance whose own heartbeat stalled past the lease expiry (a suspended laptop, an
// overloaded machine) was declared lost by its own rescuer pass: its next heartbeat found no
// row and it stopped every run, failing tasks nothing else had taken over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_heartbeat_does_not_make_an_instance_stop_its_own_runs() {
    let env = [
        ("HANDOFF_HEARTBEAT_MS", "20"),
        ("HANDOFF_LEASE_EXPIRY_MS", "100"),
    ];
    let (h, gates, sqlite, id) = waiting_run(&env).await;

    let stalled_at = unix_millis_now();
    let stall = gates.stall_heartbeats().await;
    // A rescuer pass whose cut-off is past every beat this instance wrote.
    gates
        .until("no rescuer pass ran during the stall", |g| {
            g.expired_before() > stalled_at
        })
        .await;
    let beats = gates.heartbeats();
    drop(stall);
    gates
        .until("no heartbeat after the stall", |g| {
            g.heartbeats() >= beats + 2
        })
        .await;
    assert_eq!(gates.heartbeats_found_lost(), 0, "declared lost by itself");
    let task = sqlite.get_task(&id).await.unwrap().unwrap();
    assert_eq!(task.status, TaskStatus::Running, "{:?}", task.error);

    go(&h, &id).await.unwrap();
    let task = h.wait_done("a", &id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{:?}", task.error);
}
