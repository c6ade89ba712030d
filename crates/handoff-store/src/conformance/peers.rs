//! Commands between instances: posted for one instance, taken by it exactly once, answered
//! once, read back by the poster, purged by age; each step wakes the other side. And the
//! instance whose disk holds a task's files.

use std::time::Duration;

use handoff_task::{TaskId, TaskStatus};
use tokio::sync::broadcast;

use super::{
    ConformanceStore,
    support::{WIDE, change, insert, new_task},
};
use crate::{LeaseGrant, PeerStore, StoreSignal};

/// The next wake-up, within a few seconds.
async fn next_signal(signals: &mut broadcast::Receiver<StoreSignal>) -> StoreSignal {
    tokio::time::timeout(Duration::from_secs(5), signals.recv())
        .await
        .expect("a wake-up within 5 s")
        .expect("the signals channel stays open")
}

/// A command is withdrawn only while nobody took it: withdrawn, no holder ever finds it; taken
/// first, the withdrawal fails and the answer still comes. The instance that takes a task over
/// takes the commands still waiting about it, whoever they were posted to.
pub async fn commands_are_withdrawn_or_taken_never_both<S: ConformanceStore + PeerStore>(store: S) {
    let holder = store.another_instance();
    let task = TaskId::generate().unwrap();
    let other = TaskId::generate().unwrap();
    let withdrawn = store
        .post_command(&task, "instance-b", r#"{"command":"pause"}"#, 1_000)
        .await
        .unwrap();
    assert!(store.withdraw_command(withdrawn).await.unwrap());
    assert!(!store.withdraw_command(withdrawn).await.unwrap(), "once");
    assert!(
        holder
            .take_commands("instance-b", 1_001)
            .await
            .unwrap()
            .is_empty(),
        "a withdrawn command never reaches its holder"
    );

    let taken = store
        .post_command(&task, "instance-b", r#"{"command":"resume"}"#, 1_002)
        .await
        .unwrap();
    assert_eq!(
        holder
            .take_commands("instance-b", 1_003)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(!store.withdraw_command(taken).await.unwrap(), "taken first");

    let cancel = store
        .post_command(&task, "instance-b", r#"{"command":"cancel"}"#, 1_004)
        .await
        .unwrap();
    store
        .post_command(&other, "instance-b", r#"{"command":"pause"}"#, 1_005)
        .await
        .unwrap();
    let rescued = holder.take_task_commands(&task, 1_006).await.unwrap();
    assert_eq!(rescued.iter().map(|c| c.id).collect::<Vec<_>>(), [cancel]);
    assert!(
        holder
            .take_task_commands(&task, 1_007)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        !store.withdraw_command(cancel).await.unwrap(),
        "taken by the rescuer"
    );
    assert_eq!(
        holder
            .take_commands("instance-b", 1_008)
            .await
            .unwrap()
            .len(),
        1,
        "the other task's command is still its holder's"
    );
}

/// A command posted for instance B wakes B, is taken by B once (not by A), is answered once,
/// and its answer wakes and reaches the poster; old commands are purged.
pub async fn commands_are_taken_once_and_answered_once<S: ConformanceStore + PeerStore>(store: S) {
    let holder = store.another_instance();
    let mut holder_wakes = holder.signals().await.unwrap();
    let mut poster_wakes = store.signals().await.unwrap();
    let task = TaskId::generate().unwrap();

    let id = store
        .post_command(&task, "instance-b", r#"{"command":"pause"}"#, 1_000)
        .await
        .unwrap();
    assert_eq!(
        next_signal(&mut holder_wakes).await,
        StoreSignal::CommandPosted {
            target: "instance-b".into()
        }
    );
    assert!(
        store
            .take_commands("instance-a", 1_001)
            .await
            .unwrap()
            .is_empty()
    );
    let taken = holder.take_commands("instance-b", 1_002).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(
        (taken[0].id, &taken[0].task, taken[0].target.as_str()),
        (id, &task, "instance-b")
    );
    assert_eq!(taken[0].body, r#"{"command":"pause"}"#);
    assert_eq!(taken[0].created, 1_000);
    assert!(
        holder
            .take_commands("instance-b", 1_003)
            .await
            .unwrap()
            .is_empty()
    );

    assert_eq!(store.command_reply(id).await.unwrap(), None);
    assert!(holder.reply_command(id, "paused", 1_004).await.unwrap());
    loop {
        // The poster's own post may wake it first.
        if next_signal(&mut poster_wakes).await == (StoreSignal::CommandReplied { id }) {
            break;
        }
    }
    assert!(!holder.reply_command(id, "again", 1_005).await.unwrap());
    assert_eq!(
        store.command_reply(id).await.unwrap().as_deref(),
        Some("paused")
    );
    assert_eq!(store.command_reply(id + 1_000).await.unwrap(), None);

    let later = store
        .post_command(&task, "instance-b", "later", 5_000)
        .await
        .unwrap();
    assert_eq!(store.purge_commands(2_000).await.unwrap(), 1);
    assert_eq!(store.command_reply(id).await.unwrap(), None);
    let left = holder.take_commands("instance-b", 5_001).await.unwrap();
    assert_eq!(left.iter().map(|c| c.id).collect::<Vec<_>>(), [later]);
}

/// The instance that ran a task is kept once the task ends (its lease is gone, its files are
/// still on that instance's disk).
pub async fn the_instance_that_ran_a_task_is_kept<S: ConformanceStore + PeerStore>(store: S) {
    let task = insert(&store, &new_task("agent-a", 0)).await;
    assert_eq!(store.ran_on(&task.id).await.unwrap(), None);
    let lease = LeaseGrant {
        owner: "inst-a".into(),
        until: 9_000,
    };
    let claimed = store.claim(WIDE, 10, Some(&lease)).await.unwrap().unwrap();
    assert_eq!(claimed.id, task.id);
    assert_eq!(
        store.ran_on(&task.id).await.unwrap().as_deref(),
        Some("inst-a")
    );
    let done = store
        .set_status(
            &task.id,
            &change(TaskStatus::Running, TaskStatus::Completed, 20),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.lease, None);
    assert_eq!(
        store.ran_on(&task.id).await.unwrap().as_deref(),
        Some("inst-a")
    );
}
