//! The Letta integration's per-task workspace records.

use handoff_task::{AgentId, BlockPhase, NotifyState, TaskId, WorkspaceRecord};

use super::ConformanceStore;
use crate::WorkspaceBacklog;

fn record(created_at: i64) -> WorkspaceRecord {
    WorkspaceRecord::new(
        TaskId::generate().unwrap(),
        AgentId::parse("agent-597b5756-2915-4560-ba6b-91005f085166").unwrap(),
        NotifyState::Pending,
        created_at,
    )
}

/// A workspace record keeps every field through `put_workspace`, and a second insert keeps what
/// is stored.
pub async fn records_round_trip_and_insert_keeps_the_first<S: ConformanceStore>(store: S) {
    let first = record(1_000);
    assert_eq!(store.insert_workspace(&first).await.unwrap(), first);

    let mut changed = first.clone();
    changed.block_id = Some("block-1".into());
    changed.phase = BlockPhase::Final;
    changed.notify = NotifyState::Sent;
    changed.notify_run_id = Some("run-1".into());
    changed.writes = 7;
    changed.bytes_written = 12_345;
    changed.detach_at = Some(5_000);
    changed.last_error = Some("503".into());
    changed.updated_at = 2_000;
    store.put_workspace(&changed).await.unwrap();
    assert_eq!(
        store.workspace(&first.task_id).await.unwrap(),
        Some(changed.clone())
    );

    // A second insert (a restarted task starting again) keeps what is stored.
    assert_eq!(store.insert_workspace(&first).await.unwrap(), changed);
}

/// Only records with work to do are due, scheduled ones once their time comes, and the next due
/// time is the earliest schedule.
pub async fn due_records_are_the_ones_with_work<S: ConformanceStore>(store: S) {
    let live = record(1);
    let mut waiting_detach = record(2);
    waiting_detach.phase = BlockPhase::Final;
    waiting_detach.notify = NotifyState::Sent;
    waiting_detach.detach_at = Some(10_000);
    let mut owed_notice = record(3);
    owed_notice.phase = BlockPhase::Deleted;
    let mut waiting_delete = record(4);
    waiting_delete.phase = BlockPhase::Detached;
    waiting_delete.notify = NotifyState::Off;
    waiting_delete.delete_at = Some(20_000);
    let mut done = record(5);
    done.phase = BlockPhase::Deleted;
    done.notify = NotifyState::Sent;
    // An attempt of unknown outcome is still owed.
    let mut unknown_notice = record(6);
    unknown_notice.phase = BlockPhase::Detached;
    unknown_notice.notify = NotifyState::Sending;
    unknown_notice.delete_at = Some(30_000);
    let all = [
        &live,
        &waiting_detach,
        &owed_notice,
        &waiting_delete,
        &done,
        &unknown_notice,
    ];
    for r in all {
        store.put_workspace(r).await.unwrap();
    }
    let ids = |rs: Vec<WorkspaceRecord>| {
        let mut ids: Vec<_> = rs.into_iter().map(|r| r.task_id).collect();
        ids.sort();
        ids
    };
    let mut expect = vec![
        live.task_id.clone(),
        owed_notice.task_id.clone(),
        unknown_notice.task_id.clone(),
    ];
    expect.sort();
    assert_eq!(ids(store.workspaces_due(5_000, 100).await.unwrap()), expect);
    expect.push(waiting_detach.task_id.clone());
    expect.push(waiting_delete.task_id.clone());
    expect.sort();
    assert_eq!(
        ids(store.workspaces_due(20_000, 100).await.unwrap()),
        expect
    );
    assert_eq!(store.next_workspace_due().await.unwrap(), Some(10_000));
}

/// The backlog counts blocks with writes left, notifications owed, detaches and deletes still
/// to do; finished records count for nothing.
pub async fn the_backlog_counts_each_kind_of_work_owed<S: ConformanceStore>(store: S) {
    assert_eq!(
        store.workspace_backlog().await.unwrap(),
        WorkspaceBacklog::default()
    );
    let with = |phase, notify| {
        let mut r = record(1);
        r.phase = phase;
        r.notify = notify;
        r
    };
    for r in [
        with(BlockPhase::Creating, NotifyState::Pending),
        with(BlockPhase::Attached, NotifyState::Off),
        with(BlockPhase::Final, NotifyState::Sending),
        with(BlockPhase::Final, NotifyState::Sent),
        with(BlockPhase::Detached, NotifyState::Failed),
        with(BlockPhase::Deleted, NotifyState::Pending),
        with(BlockPhase::Deleted, NotifyState::Sent),
        with(BlockPhase::Abandoned, NotifyState::Off),
    ] {
        store.put_workspace(&r).await.unwrap();
    }
    assert_eq!(
        store.workspace_backlog().await.unwrap(),
        WorkspaceBacklog {
            block_writes: 2,
            notifications: 3,
            detaches: 2,
            deletes: 1,
        }
    );
}
