//! Self-fencing on a shared store (issue 39), stepped by the test: heartbeats are stalled at
//! will, the scripted executor reports every pause, resume and cancel, and "another instance"
//! is a second handle on the same file. A run freezes when its lease lapses and thaws when the
//! lease is re-won; a run whose task was taken over meanwhile is killed; an instance declared
//! lost kills its runs and writes nothing about them; a cancel left for a dead holder is
//! honoured by the instance that takes its task over.

use std::sync::Arc;

use handoff_runner::Capabilities;
use handoff_store::{
    ClaimLimits, InstanceRecord, InstanceStore, LeaseGrant, PeerStore, SqliteStore, TaskStore,
};
use handoff_task::{NewTask, TaskId, TaskOptions, TaskStatus, unix_millis_now};

use super::{
    common::{PATIENCE, wait_until},
    gated::{GatedStore, Gates},
    rig::{Rig, rig_with, settings},
    scripted::{Call, Calls, Kind, RunHandle},
};

/// Beats every 50 ms, leases of a second: a stalled beat lapses within a second, while a
/// loaded machine's late beats do not.
const FAST: [(&str, &str); 3] = [
    ("HANDOFF_HEARTBEAT_MS", "50"),
    ("HANDOFF_LEASE_EXPIRY_MS", "1000"),
    ("HANDOFF_CLOCK_SKEW_MS", "100"),
];

/// An engine on a gated store posing as shared, running one task of the pausable fake that
/// has printed a line (so its run is attached); a second handle on the same file.
async fn fenced_run() -> (Rig, Gates, SqliteStore, TaskId, RunHandle) {
    let dir = tempfile::tempdir().unwrap();
    let config = Arc::new(settings(&dir, &FAST));
    let sqlite = SqliteStore::open(&config.database_path()).await.unwrap();
    let (store, gates) = GatedStore::new(sqlite);
    gates.share();
    let capabilities = Capabilities {
        pause: true,
        ..Capabilities::default()
    };
    let other = SqliteStore::open(&config.database_path()).await.unwrap();
    let mut rig = rig_with(dir, config, store, capabilities).await;
    let id = rig.submit_task().await;
    let run = rig.script.next_run().await;
    run.output("working").await;
    rig.until_event(&id, |e| e.message == "working").await;
    (rig, gates, other, id, run)
}

/// The next call the run received, which must be of `kind`.
async fn expect(calls: &mut Calls, kind: Kind) -> Call {
    let observed = calls.next().await;
    assert_eq!(observed.call.kind(), kind, "{:?}", observed.call);
    observed.call
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_freezes_while_its_lease_lapses_and_thaws_once_it_is_renewed() {
    let (rig, gates, other, id, mut run) = fenced_run().await;

    let stall = gates.stall_heartbeats().await;
    expect(&mut run.calls, Kind::Pause).await;
    let frozen = other.get_task(&id).await.unwrap().unwrap();
    assert_eq!(frozen.status, TaskStatus::Running, "a lapse is not a pause");
    drop(stall);
    expect(&mut run.calls, Kind::Resume).await;

    assert!(run.succeed().await);
    rig.until_done(&id).await;
    let task = other.get_task(&id).await.unwrap().unwrap();
    assert_eq!(task.status, TaskStatus::Completed, "{:?}", task.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_run_whose_task_was_taken_over_is_killed() {
    let (rig, gates, other, id, mut run) = fenced_run().await;
    let owner = rig.engine.instance_id().to_string();

    let stall = gates.stall_heartbeats().await;
    expect(&mut run.calls, Kind::Pause).await;
    // Another instance takes the lease over as it would once the lease ran out (the store
    // compares with the time it is given: no waiting for the clock), while this one cannot
    // renew.
    let until = other
        .get_task(&id)
        .await
        .unwrap()
        .unwrap()
        .lease
        .unwrap()
        .until;
    let grant = LeaseGrant {
        owner: "instance-other".to_owned(),
        until: unix_millis_now() + 60_000,
    };
    let taken = other
        .take_over(&id, &owner, until + 1, &grant)
        .await
        .unwrap()
        .expect("the lapsed lease is taken over");
    drop(stall);
    expect(&mut run.calls, Kind::Cancel).await;

    let now = other.get_task(&id).await.unwrap().unwrap();
    assert_eq!(now.status, TaskStatus::Running);
    assert_eq!(now.fence, taken.fence, "the new owner's task is untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_declared_lost_kills_its_runs_and_writes_nothing_about_them() {
    let (mut rig, gates, other, id, mut run) = fenced_run().await;
    let old = rig.engine.instance_id().to_string();
    let before = other.get_task(&id).await.unwrap().unwrap();
    let (events, _) = other.events(&id, 0, 1_000).await.unwrap();

    let stall = gates.stall_heartbeats().await;
    // The rescuer elsewhere declared this instance lost; it has not reached the task yet.
    other.deregister_instance(&old).await.unwrap();
    drop(stall);
    // On a slow machine the stalled heartbeats may let the lease run low first: the run is then
    // frozen before it is killed (and thawed when a late heartbeat renews the lease).
    loop {
        let call = run.calls.next().await.call;
        match call.kind() {
            Kind::Cancel => break,
            Kind::Pause | Kind::Resume => {}
            _ => panic!("expected the run killed, got {call:?}"),
        }
    }
    // The driver is done with the run once the executor released it.
    loop {
        let call = rig.script.calls.next().await.call;
        if call.kind() == Kind::Release {
            break;
        }
        assert_eq!(call.kind(), Kind::Start, "{call:?}");
    }
    gates
        .until("the instance came back under a new id", |_| {
            *rig.engine.instance_id() != *old
        })
        .await;

    let after = other.get_task(&id).await.unwrap().unwrap();
    assert_eq!(after.status, TaskStatus::Running, "{:?}", after.error);
    assert_eq!(after.fence, before.fence);
    assert_eq!(
        after.lease.map(|l| l.owner),
        Some(old),
        "left to the rescuer"
    );
    let (later, _) = other.events(&id, 0, 1_000).await.unwrap();
    assert_eq!(
        later.len(),
        events.len(),
        "nothing written about the lost run"
    );
    let registered = other.instances().await.unwrap();
    assert!(
        registered
            .iter()
            .any(|i| *i.instance.id == *rig.engine.instance_id()),
        "registered again"
    );
}

/// A cancel posted to a holder that died stays a durable intent: the instance that takes the
/// task over takes the cancel with it and honours it — the task ends `cancelled`, although it
/// opted in to re-running — and the waiting caller gets its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_waiting_for_a_lost_holder_is_honoured_by_the_instance_that_takes_over() {
    let dir = tempfile::tempdir().unwrap();
    let config = Arc::new(settings(&dir, &FAST));
    let sqlite = SqliteStore::open(&config.database_path()).await.unwrap();
    let other = SqliteStore::open(&config.database_path()).await.unwrap();
    // A dead instance's running task, its lease run out, and a cancel posted to it.
    let now = unix_millis_now();
    other
        .register_instance(&InstanceRecord {
            id: "instance-dead".to_owned(),
            host: "elsewhere".to_owned(),
            pid: 1,
            started: now - 10_000,
            heartbeat: now - 10_000,
            draining: false,
        })
        .await
        .unwrap();
    let task = NewTask {
        id: TaskId::generate().unwrap(),
        agent_id: super::common::agent("a"),
        description: "do the work".to_owned(),
        executor: super::scripted::NAME.to_owned(),
        options: TaskOptions {
            requeue_on_restart: true,
            ..TaskOptions::default()
        },
        priority: 0,
        workdir: dir.path().display().to_string(),
        created_at: now,
        idempotency_key: None,
        metadata: serde_json::json!({}),
        repeat_guard: None,
    };
    other.insert_task(&task, None, 10).await.unwrap();
    let dead = LeaseGrant {
        owner: "instance-dead".to_owned(),
        until: now - 5_000,
    };
    let limits = ClaimLimits {
        max_active: 10,
        max_active_per_agent: 10,
    };
    other
        .claim(limits, now, Some(&dead))
        .await
        .unwrap()
        .unwrap();
    let cancel = other
        .post_command(
            &task.id,
            "instance-dead",
            r#"{"command":"cancel","reason":"no longer needed"}"#,
            now,
        )
        .await
        .unwrap();

    let (store, gates) = GatedStore::new(sqlite);
    gates.share();
    let rig = rig_with(dir, config, store, Capabilities::default()).await;
    rig.until_done(&task.id).await;

    let done = other.get_task(&task.id).await.unwrap().unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled, "{:?}", done.error);
    assert_eq!(done.error.as_deref(), Some("cancelled: no longer needed"));
    let (events, _) = other.events(&task.id, 0, 1_000).await.unwrap();
    assert!(
        !events
            .iter()
            .skip(1)
            .any(|e| e.data.get("to").and_then(|t| t.as_str()) == Some("queued")),
        "re-queued although a cancel was waiting: {events:?}"
    );
    // The reply is written when the run's stop is under way, which may come after the final
    // state the wait above saw: wait for it.
    let reply = wait_until("the cancel's reply", PATIENCE, async || {
        match other.command_reply(cancel).await.unwrap() {
            Some(reply) => Ok(reply),
            None => Err("no reply yet"),
        }
    })
    .await;
    assert_eq!(reply, r#"{"reply":"stopping"}"#);
}
