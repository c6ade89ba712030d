//! A caller waiting in its submitting call for the final result: the wait is open from before
//! the task is stored until the call lets go of it, integrations hear when the last wait ends,
//! and only a wait that handed over the final result leaves a durable mark on the task.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use handoff_engine::Integration;
use handoff_store::SqliteStore;
use handoff_task::{Task, TaskId, TaskStatus};

use super::common::{Harness, agent, as_agent, config, script, start_plugged};

/// Records the tasks whose last wait ended, in order.
#[derive(Default)]
struct Ended {
    tasks: Mutex<Vec<TaskId>>,
}

#[async_trait]
impl Integration for Ended {
    async fn task_started(&self, _: &Task) {}
    fn events_appended(&self, _: &TaskId) {}
    fn status_changed(&self, _: &TaskId, _: TaskStatus) {}
    fn result_wait_ended(&self, task: &TaskId) {
        self.tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(task.clone());
    }
    async fn shutdown(&self) {}
}

impl Ended {
    fn seen(&self) -> Vec<TaskId> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

async fn start(ended: Arc<Ended>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&config(&dir, &[]).database_path())
        .await
        .unwrap();
    start_plugged(dir, &[], Arc::new(store), vec![ended]).await
}

async fn delivered_at(h: &Harness, id: &TaskId) -> Option<i64> {
    h.engine
        .readable(&as_agent(&agent("alice")), id)
        .await
        .unwrap()
        .result_delivered_at
}

#[tokio::test]
async fn a_delivered_result_is_stored_before_the_wait_ends() {
    let ended = Arc::new(Ended::default());
    let h = start(ended.clone()).await;
    let (submitted, wait) = h
        .engine
        .submit_awaited(&agent("alice"), script("echo hi"))
        .await
        .unwrap();
    let id = submitted.task.id.clone();
    assert!(h.engine.awaits_result(&id));
    h.wait_done("alice", &id).await;
    assert!(h.engine.awaits_result(&id), "open until the call lets go");
    assert!(ended.seen().is_empty());

    wait.delivered().await.unwrap();
    assert!(!h.engine.awaits_result(&id));
    assert_eq!(ended.seen(), vec![id.clone()]);
    assert!(delivered_at(&h, &id).await.is_some());
}

#[tokio::test]
async fn a_wait_let_go_without_the_result_leaves_no_mark() {
    let ended = Arc::new(Ended::default());
    let h = start(ended.clone()).await;
    let (submitted, wait) = h
        .engine
        .submit_awaited(&agent("alice"), script("echo hi"))
        .await
        .unwrap();
    let id = submitted.task.id.clone();
    drop(wait);
    assert!(!h.engine.awaits_result(&id));
    assert_eq!(ended.seen(), vec![id.clone()]);
    h.wait_done("alice", &id).await;
    assert_eq!(delivered_at(&h, &id).await, None);
    // A plain submission is never awaited.
    let plain = h.submit("alice", "echo hi").await.task.id;
    assert!(!h.engine.awaits_result(&plain));
}
