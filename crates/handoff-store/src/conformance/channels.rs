//! Chat integrations' records: channels, positions, applied commands.

use handoff_task::TaskId;

use super::ConformanceStore;
use crate::ChannelRecord;

fn channel(integration: &str, room: &str, created_at: i64) -> ChannelRecord {
    ChannelRecord {
        integration: integration.to_owned(),
        task_id: TaskId::generate().unwrap(),
        channel_id: room.to_owned(),
        created_at,
        close_at: None,
        closed_at: None,
    }
}

/// A channel keeps every field, is found by task and by id within its integration only, and
/// leaves the open list once closed.
pub async fn channels_round_trip_and_close<S: ConformanceStore>(store: S) {
    let first = channel("matrix", "!a", 1);
    let second = channel("matrix", "!b", 2);
    let other = channel("elsewhere", "!a", 3);
    for r in [&first, &second, &other] {
        store.put_channel(r).await.unwrap();
    }
    assert_eq!(
        store.channel("matrix", &first.task_id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.channel("elsewhere", &first.task_id).await.unwrap(),
        None
    );
    assert_eq!(
        store.channel_by_id("matrix", "!b").await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        store.open_channels("matrix").await.unwrap(),
        vec![first.clone(), second.clone()]
    );
    let mut closed = first.clone();
    closed.close_at = Some(10);
    closed.closed_at = Some(11);
    store.put_channel(&closed).await.unwrap();
    assert_eq!(
        store.channel("matrix", &first.task_id).await.unwrap(),
        Some(closed)
    );
    assert_eq!(store.open_channels("matrix").await.unwrap(), vec![second]);
}

/// A position is kept per integration and replaced; a command is applied once.
pub async fn cursors_are_replaced_and_commands_applied_once<S: ConformanceStore>(store: S) {
    assert_eq!(store.cursor("matrix", "since").await.unwrap(), None);
    store.set_cursor("matrix", "since", "s1").await.unwrap();
    store.set_cursor("matrix", "since", "s2").await.unwrap();
    store.set_cursor("other", "since", "x").await.unwrap();
    assert_eq!(
        store.cursor("matrix", "since").await.unwrap().as_deref(),
        Some("s2")
    );
    assert!(store.mark_applied("matrix", "$event1", 1).await.unwrap());
    assert!(!store.mark_applied("matrix", "$event1", 2).await.unwrap());
    assert!(store.mark_applied("other", "$event1", 2).await.unwrap());
}
