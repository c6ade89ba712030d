//! Instances, heartbeats and leases with fencing: an instance that lost a task (another one
//! re-queued, re-claimed or finished it) has every write about it refused, and nothing changes.

use handoff_task::{ArtifactBody, ArtifactKind, EventKind, NewEvent, PendingInput, TaskStatus};
use serde_json::json;

use super::{
    ConformanceStore,
    support::{WIDE, change, event_count, insert, new_task},
};
use crate::{InstanceRecord, LeaseGrant, NewArtifact, StoreError};

fn instance(id: &str, started: i64) -> InstanceRecord {
    InstanceRecord {
        id: id.into(),
        host: "host-1".into(),
        pid: 4242,
        started,
        heartbeat: started,
        draining: false,
    }
}

fn lease(owner: &str, until: i64) -> LeaseGrant {
    LeaseGrant {
        owner: owner.into(),
        until,
    }
}

fn fenced<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    assert!(
        matches!(result, Err(StoreError::Fenced { .. })),
        "expected Fenced, got {result:?}"
    );
}

/// Instances register, beat (renewing exactly their own tasks' leases), drain and leave; a
/// claim with a lease records owner, expiry and a fencing token incremented per claim.
pub async fn instances_beat_and_renew_their_own_leases<S: ConformanceStore>(store: S) {
    store
        .register_instance(&instance("inst-a", 10))
        .await
        .unwrap();
    store
        .register_instance(&instance("inst-b", 20))
        .await
        .unwrap();
    let mine = insert(&store, &new_task("agent-a", 0)).await;
    let theirs = insert(&store, &new_task("agent-a", 0)).await;
    assert_eq!(mine.lease, None);
    assert_eq!(mine.fence, 0);

    let claimed = store
        .claim(WIDE, 30, Some(&lease("inst-a", 1_030)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, mine.id);
    assert_eq!(
        claimed.lease.as_ref().map(|l| (l.owner.as_str(), l.until)),
        Some(("inst-a", 1_030))
    );
    assert_eq!(claimed.fence, 1);
    let other = store
        .claim(WIDE, 31, Some(&lease("inst-b", 1_031)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.id, theirs.id);

    let listed = store.instances().await.unwrap();
    let held: Vec<_> = listed
        .iter()
        .map(|i| (i.instance.id.as_str(), i.tasks_held))
        .collect();
    assert_eq!(held, [("inst-a", 1), ("inst-b", 1)]);
    assert_eq!(listed[0].instance, instance("inst-a", 10));

    assert_eq!(
        store.heartbeat("inst-a", 500, 1_500).await.unwrap(),
        Some(1)
    );
    let renewed = store.get_task(&mine.id).await.unwrap().unwrap();
    assert_eq!(renewed.lease.map(|l| l.until), Some(1_500));
    let untouched = store.get_task(&theirs.id).await.unwrap().unwrap();
    assert_eq!(untouched.lease.map(|l| l.until), Some(1_031));
    assert_eq!(
        store.heartbeat("inst-gone", 500, 1_500).await.unwrap(),
        None
    );

    // A finished task is nobody's.
    let done = change(TaskStatus::Running, TaskStatus::Completed, 600);
    let finished = store.set_status(&mine.id, &done).await.unwrap().unwrap();
    assert_eq!(finished.lease, None);
    assert_eq!(
        store.heartbeat("inst-a", 700, 1_700).await.unwrap(),
        Some(0)
    );

    store.set_draining("inst-b").await.unwrap();
    store.deregister_instance("inst-a").await.unwrap();
    store
        .register_instance(&instance("inst-c", 30))
        .await
        .unwrap();
    // inst-c last beat at 30: silent since before 25 it is not, inst-b (20) is.
    let expired = store.expire_instances(25, "inst-c").await.unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].id, "inst-b");
    assert!(expired[0].draining);
    assert_eq!(store.heartbeat("inst-b", 800, 1_800).await.unwrap(), None);
    let listed = store.instances().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].instance, instance("inst-c", 30));
    // The caller is never declared lost by its own pass, however late its last beat.
    assert!(
        store
            .expire_instances(1_000, "inst-c")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.heartbeat("inst-c", 1_000, 2_000).await.unwrap(),
        Some(0)
    );
}

/// After another instance re-queued and re-claimed a task, every write of its old owner is
/// refused with `Fenced` and leaves the task, its events, artifacts and requests unchanged;
/// the new owner's writes go through.
pub async fn a_stale_token_is_refused_and_changes_nothing<S: ConformanceStore>(store: S) {
    let zombie = store.clone();
    let rescuer = store.another_instance();
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let first = zombie
        .claim(WIDE, 10, Some(&lease("inst-a", 100)))
        .await
        .unwrap()
        .unwrap();
    zombie
        .append_events(&task.id, 11, &[NewEvent::new(EventKind::Output, "before")])
        .await
        .unwrap();

    // The lease ran out: the rescuer re-queues the task and claims it again.
    let queued = rescuer
        .requeue(
            &task.id,
            TaskStatus::Running,
            200,
            "re-queued: instance inst-a lost",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!((queued.lease, queued.fence), (None, first.fence + 1));
    let second = rescuer
        .claim(WIDE, 201, Some(&lease("inst-b", 300)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.fence, first.fence + 2);
    let before = rescuer.get_task(&task.id).await.unwrap().unwrap();
    let events_before = event_count(&store, &task.id).await;

    fenced(
        zombie
            .append_events(&task.id, 210, &[NewEvent::new(EventKind::Output, "late")])
            .await,
    );
    fenced(
        zombie
            .set_status(
                &task.id,
                &change(TaskStatus::Running, TaskStatus::Completed, 211),
            )
            .await,
    );
    fenced(
        zombie
            .set_runner_state(&task.id, Some(&json!({ "pid": 1 })))
            .await,
    );
    fenced(zombie.set_workdir(&task.id, "/elsewhere").await);
    let artifact = NewArtifact {
        kind: ArtifactKind::Output,
        size: 4,
        capped: false,
        body: ArtifactBody::Inline(b"late".to_vec()),
    };
    fenced(zombie.put_artifact(&task.id, 212, &artifact).await);
    let ask = PendingInput {
        task_id: task.id.clone(),
        request_id: "perm-1".into(),
        request: json!({ "kind": "permission" }),
        asked_at: 213,
        expires_at: 9_999,
    };
    fenced(zombie.put_input_request(&ask).await);
    fenced(
        zombie
            .requeue(&task.id, TaskStatus::Running, 214, "zombie")
            .await,
    );
    // Refused once, refused for good: a lost task is never written to unfenced.
    fenced(zombie.clear_input_requests(&task.id).await);
    fenced(
        zombie
            .append_events(&task.id, 215, &[NewEvent::new(EventKind::Output, "again")])
            .await,
    );

    assert_eq!(store.get_task(&task.id).await.unwrap().unwrap(), before);
    assert_eq!(event_count(&store, &task.id).await, events_before);
    assert!(store.artifacts(&task.id).await.unwrap().is_empty());
    assert!(store.input_requests(&task.id).await.unwrap().is_empty());

    // The new owner writes as usual.
    rescuer
        .append_events(&task.id, 220, &[NewEvent::new(EventKind::Output, "mine")])
        .await
        .unwrap();
    rescuer
        .put_artifact(&task.id, 221, &artifact)
        .await
        .unwrap();
    let done = rescuer
        .set_status(
            &task.id,
            &change(TaskStatus::Running, TaskStatus::Completed, 222),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(event_count(&store, &task.id).await, events_before + 2);
}

/// A task another instance finished (the rescuer failed it) fences its old owner too.
pub async fn a_task_failed_elsewhere_fences_its_old_owner<S: ConformanceStore>(store: S) {
    let zombie = store.clone();
    let rescuer = store.another_instance();
    let task = insert(&store, &new_task("agent-a", 0)).await;
    zombie
        .claim(WIDE, 10, Some(&lease("inst-a", 100)))
        .await
        .unwrap()
        .unwrap();
    let mut lost = change(TaskStatus::Running, TaskStatus::Failed, 200);
    lost.error = Some("interrupted: instance inst-a lost".into());
    rescuer.set_status(&task.id, &lost).await.unwrap().unwrap();
    let events_before = event_count(&store, &task.id).await;
    fenced(
        zombie
            .append_events(&task.id, 210, &[NewEvent::new(EventKind::Output, "late")])
            .await,
    );
    assert_eq!(event_count(&store, &task.id).await, events_before);
    let after = store.get_task(&task.id).await.unwrap().unwrap();
    assert_eq!(after.status, TaskStatus::Failed);
    assert_eq!(
        after.error.as_deref(),
        Some("interrupted: instance inst-a lost")
    );
}

/// A rate shared by instances: a burst of three, then one per interval, per key — whichever
/// instance asks.
pub async fn rates_hold_across_instances<S: ConformanceStore>(store: S) {
    let other = store.another_instance();
    let (interval, tolerance) = (1_000, 2_000);
    for (at, asker) in [(10_000, &store), (10_001, &other), (10_002, &store)] {
        assert_eq!(
            asker
                .take_rate("agent-a", interval, tolerance, at)
                .await
                .unwrap(),
            None,
            "within the burst at {at}"
        );
    }
    let wait = other
        .take_rate("agent-a", interval, tolerance, 10_003)
        .await
        .unwrap()
        .expect("the burst is spent");
    assert_eq!(wait, 997);
    assert_eq!(
        store
            .take_rate("agent-b", interval, tolerance, 10_003)
            .await
            .unwrap(),
        None,
        "another key has its own"
    );
    assert_eq!(
        store
            .take_rate("agent-a", interval, tolerance, 11_000)
            .await
            .unwrap(),
        None,
        "one more after an interval"
    );
    assert!(
        other
            .take_rate("agent-a", interval, tolerance, 11_001)
            .await
            .unwrap()
            .is_some()
    );
}

/// A restarted instance takes its dead predecessor's leases over: the token moves on, the
/// predecessor's handle is fenced, and a second take-over (or one from the wrong instance)
/// finds nothing.
pub async fn a_successor_takes_its_predecessors_leases_over<S: ConformanceStore>(store: S) {
    let before = store.another_instance();
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let claimed = before
        .claim(WIDE, 10, Some(&lease("inst-old", 5_000)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, task.id);

    assert_eq!(
        store
            .take_over(&task.id, "inst-other", i64::MAX, &lease("inst-new", 9_000))
            .await
            .unwrap(),
        None
    );
    let taken = store
        .take_over(&task.id, "inst-old", i64::MAX, &lease("inst-new", 9_000))
        .await
        .unwrap()
        .expect("the predecessor's lease moves");
    assert_eq!(
        taken.lease.as_ref().map(|l| (l.owner.as_str(), l.until)),
        Some(("inst-new", 9_000))
    );
    assert_eq!(taken.fence, claimed.fence + 1);
    assert_eq!(taken.status, TaskStatus::Running);
    assert_eq!(
        store.ran_on(&task.id).await.unwrap().as_deref(),
        Some("inst-new")
    );
    fenced(
        before
            .append_events(&task.id, 20, &[NewEvent::new(EventKind::Output, "late")])
            .await,
    );
    store
        .append_events(&task.id, 21, &[NewEvent::new(EventKind::Output, "mine")])
        .await
        .unwrap();
    assert_eq!(
        store
            .take_over(&task.id, "inst-old", i64::MAX, &lease("inst-new", 9_000))
            .await
            .unwrap(),
        None
    );
}

/// A rescuer takes a lease over only once it ran out before the time it names: a lease the
/// owner renewed meanwhile stays the owner's, and the owner's heartbeat no longer renews a
/// lease taken from it.
pub async fn a_takeover_needs_an_expired_lease_and_beats_a_late_renewal<S: ConformanceStore>(
    store: S,
) {
    let owner = store.another_instance();
    owner
        .register_instance(&instance("inst-old", 10))
        .await
        .unwrap();
    let task = insert(&store, &new_task("agent-a", 0)).await;
    owner
        .claim(WIDE, 10, Some(&lease("inst-old", 5_000)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store
            .take_over(&task.id, "inst-old", 5_000, &lease("inst-new", 9_000))
            .await
            .unwrap(),
        None,
        "a lease running until 5 000 has not run out before 5 000"
    );
    assert_eq!(
        owner.heartbeat("inst-old", 5_500, 8_000).await.unwrap(),
        Some(1)
    );
    assert_eq!(
        store
            .take_over(&task.id, "inst-old", 7_000, &lease("inst-new", 9_000))
            .await
            .unwrap(),
        None,
        "renewed until 8 000"
    );
    let taken = store
        .take_over(&task.id, "inst-old", 8_001, &lease("inst-new", 12_000))
        .await
        .unwrap()
        .expect("an expired lease moves");
    assert_eq!(taken.lease.map(|l| l.owner), Some("inst-new".to_owned()));
    assert_eq!(
        owner.heartbeat("inst-old", 9_000, 12_000).await.unwrap(),
        Some(0),
        "the old owner renews nothing any more"
    );
    fenced(
        owner
            .append_events(&task.id, 9_001, &[NewEvent::new(EventKind::Output, "late")])
            .await,
    );
}

/// The loop guard's call history is one per caller across instances: each sees the calls the
/// others recorded, the window and the cap forget old ones, and callers do not mix.
pub async fn the_call_history_is_shared_and_forgets<S: ConformanceStore>(store: S) {
    let other = store.another_instance();
    let record = |asker: &S, caller: &'static str, key: &'static str, at: i64| {
        let asker = asker.clone();
        async move {
            asker
                .record_call(caller, key, at, at - 1_000, 3)
                .await
                .unwrap()
        }
    };
    assert_eq!(record(&store, "a", "x", 10_000).await, ["x"]);
    assert_eq!(record(&other, "a", "y", 10_100).await, ["x", "y"]);
    assert_eq!(
        record(&store, "b", "x", 10_200).await,
        ["x"],
        "callers do not mix"
    );
    assert_eq!(record(&other, "a", "x", 10_300).await, ["x", "y", "x"]);
    assert_eq!(
        record(&store, "a", "z", 10_400).await,
        ["y", "x", "z"],
        "only the latest three are kept"
    );
    // 11 150: the window forgets everything before 10 150.
    assert_eq!(record(&other, "a", "w", 11_150).await, ["x", "z", "w"]);
    assert_eq!(
        record(&store, "b", "v", 11_250).await,
        ["v"],
        "b's x is too old"
    );
}
