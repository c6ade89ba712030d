//! Reads on the calling thread: the same answers as the pool, and the pool's answers when SQLite
//! cannot give them inline.

use handoff_task::{AgentId, EventKind, NewEvent, PendingInput, TaskStatus};
use serde_json::json;
use tempfile::TempDir;

use super::{SqliteStore, inline::InlineReads, small};
use crate::ops::{events, inputs, task_list, tasks};
use crate::{
    TaskFilter, TaskStore,
    conformance::support::{WIDE, insert, new_task},
};

async fn open() -> (SqliteStore, TempDir) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("handoff.db");
    let store = SqliteStore::open(&path).await.unwrap();
    (store, dir)
}

#[tokio::test]
async fn inline_reads_answer_what_the_pool_answers() {
    let (store, _dir) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let missing = new_task("agent-a", 0).id;
    let logged = [
        NewEvent::new(EventKind::Tool, "bash: ls").with_data(json!({"tool": "bash"})),
        NewEvent::new(EventKind::Log, "a line"),
        NewEvent::new(EventKind::Log, "another"),
    ];
    store.append_events(&task.id, 2, &logged).await.unwrap();
    store
        .put_input_request(&PendingInput {
            task_id: task.id.clone(),
            request_id: "perm-1".into(),
            request: json!({"kind": "permission", "title": "write?"}),
            asked_at: 3,
            expires_at: 9,
        })
        .await
        .unwrap();

    let inline = |id| store.inline.read(|c| small::get_inline(c, id)).unwrap();
    assert_eq!(
        inline(&task.id).unwrap(),
        tasks::get(&mut *store.read.acquire().await.unwrap(), &task.id)
            .await
            .unwrap()
    );
    assert_eq!(inline(&missing).unwrap(), None);

    for n in [0, 2, 10] {
        let here = store.inline.read(|c| small::recent_inline(c, &task.id, n));
        let pooled = events::recent(&mut *store.read.acquire().await.unwrap(), &task.id, n)
            .await
            .unwrap();
        assert_eq!(here.unwrap().unwrap(), pooled, "the last {n}");
    }
    for kind in [EventKind::Tool, EventKind::Output] {
        let here = store
            .inline
            .read(|c| small::last_of_kind_inline(c, &task.id, kind));
        let pooled =
            events::last_of_kind(&mut *store.read.acquire().await.unwrap(), &task.id, kind)
                .await
                .unwrap();
        assert_eq!(here.unwrap().unwrap(), pooled, "{kind:?}");
    }
    let here = store.inline.read(|c| small::of_task_inline(c, &task.id));
    let pooled = inputs::of_task(&mut *store.read.acquire().await.unwrap(), &task.id)
        .await
        .unwrap();
    assert_eq!(here.unwrap().unwrap(), pooled);
    assert_eq!(pooled.len(), 1);
}

#[tokio::test]
async fn inline_task_pages_are_the_pools_pages() {
    let (store, _dir) = open().await;
    for n in 0..6 {
        let agent = if n % 2 == 0 { "agent-a" } else { "agent-b" };
        insert(&store, &new_task(agent, 0)).await;
    }
    store.claim_next(WIDE, 5).await.unwrap().unwrap();
    let agent = Some(AgentId::parse("agent-a").unwrap());
    let filters = [
        TaskFilter {
            agent_id: None,
            statuses: vec![],
            limit: 50,
            before_seq: None,
            text: None,
        },
        TaskFilter {
            agent_id: agent.clone(),
            statuses: vec![],
            limit: 2,
            before_seq: None,
            text: None,
        },
        TaskFilter {
            agent_id: agent.clone(),
            statuses: vec![TaskStatus::Running, TaskStatus::Queued],
            limit: 1,
            before_seq: None,
            text: None,
        },
        TaskFilter {
            agent_id: None,
            statuses: vec![TaskStatus::Queued],
            limit: 2,
            before_seq: Some(4),
            text: None,
        },
        TaskFilter {
            agent_id: agent,
            statuses: vec![],
            limit: 0,
            before_seq: Some(3),
            text: None,
        },
    ];
    for filter in &filters {
        let here = store.inline.read(|c| small::list_inline(c, filter));
        let pooled = task_list::list(&mut *store.read.acquire().await.unwrap(), filter)
            .await
            .unwrap();
        assert_eq!(here.unwrap().unwrap(), pooled, "{filter:?}");
    }
    let page = task_list::list(&mut *store.read.acquire().await.unwrap(), &filters[1])
        .await
        .unwrap();
    assert_eq!(page.tasks.len(), 2);
    assert!(page.next_before_seq.is_some());
}

#[tokio::test]
async fn reads_sqlite_cannot_answer_inline_are_answered_by_the_pool() {
    let (mut store, dir) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let tool = NewEvent::new(EventKind::Tool, "bash: ls");
    store.append_events(&task.id, 2, &[tool]).await.unwrap();

    // A file that cannot be opened (nothing creates it) fails every inline read inside SQLite.
    store.inline = InlineReads::new(&dir.path().join("absent.db"));
    assert!(
        store
            .inline
            .read(|c| small::get_inline(c, &task.id))
            .is_none()
    );

    assert_eq!(store.get_task(&task.id).await.unwrap(), Some(task.clone()));
    let recent = store.recent_events(&task.id, 5).await.unwrap();
    assert_eq!(recent.len(), 2);
    let last = store.last_event_of_kind(&task.id, EventKind::Tool).await;
    assert_eq!(
        last.unwrap().map(|e| e.message).as_deref(),
        Some("bash: ls")
    );
    assert!(store.input_requests(&task.id).await.unwrap().is_empty());
    let all = TaskFilter {
        agent_id: None,
        statuses: vec![],
        limit: 10,
        before_seq: None,
        text: None,
    };
    assert_eq!(store.list_tasks(&all).await.unwrap().tasks, vec![task]);
}

#[tokio::test]
async fn a_closed_store_reads_nothing_inline() {
    let (store, _dir) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    assert!(store.get_task(&task.id).await.unwrap().is_some());
    store.close().await;
    assert!(
        store
            .inline
            .read(|c| small::get_inline(c, &task.id))
            .is_none()
    );
    assert!(store.get_task(&task.id).await.is_err());
}

#[tokio::test]
async fn more_open_requests_than_an_inline_read_takes_are_read_by_the_pool() {
    let (store, _dir) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let many = super::inline::MAX_ROWS as usize + 1;
    for n in 0..many {
        let request = PendingInput {
            task_id: task.id.clone(),
            request_id: format!("perm-{n}"),
            request: json!({"kind": "permission"}),
            asked_at: n as i64,
            expires_at: 1_000,
        };
        store.put_input_request(&request).await.unwrap();
    }
    assert!(
        store
            .inline
            .read(|c| small::of_task_inline(c, &task.id))
            .is_none()
    );
    assert_eq!(store.input_requests(&task.id).await.unwrap().len(), many);
}
