//! Builders and small queries the conformance cases (and store-specific tests) share.

use handoff_task::{
    AgentId, Approval, ApprovalScope, AuditRecord, NewTask, Task, TaskId, TaskOptions, TaskStatus,
};
use serde_json::json;
use std::{future::Future, sync::Arc};
use tokio::sync::Semaphore;

use crate::{ClaimLimits, IdempotencyClaim, InsertOutcome, StatusChange, TaskStore};

/// Racing calls in flight at once, at most: fewer than a PostgreSQL pool's connections, so on
/// a loaded machine a racer waits for the lock it races for, never for a connection (the pool
/// gives up on that after `PgStore::ACQUIRE_TIMEOUT`, which is the store's outage bound).
const RACERS: usize = 8;

/// Runs `call(0..n)` as racing tasks, at most [`RACERS`] in flight; their results in order.
pub(crate) async fn race<T, Fut>(n: usize, call: impl Fn(usize) -> Fut) -> Vec<T>
where
    T: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    let gate = Arc::new(Semaphore::new(RACERS));
    let mut handles = Vec::new();
    for i in 0..n {
        let (gate, racer) = (Arc::clone(&gate), call(i));
        handles.push(tokio::spawn(async move {
            let _turn = gate.acquire_owned().await.unwrap();
            racer.await
        }));
    }
    let mut results = Vec::new();
    for h in handles {
        results.push(h.await.unwrap());
    }
    results
}

/// A backlog limit no case reaches.
pub(crate) const ROOMY: u32 = 1000;

/// Claim limits no case reaches.
pub(crate) const WIDE: ClaimLimits = ClaimLimits {
    max_active: 100,
    max_active_per_agent: 100,
};

pub(crate) fn agent(name: &str) -> AgentId {
    AgentId::parse(name).unwrap()
}

pub(crate) fn new_task(agent_name: &str, priority: i32) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        agent_id: agent(agent_name),
        description: format!("do something for {agent_name}"),
        executor: "claude".into(),
        options: TaskOptions {
            timeout_ms: 60_000,
            requeue_on_restart: true,
            observers: vec![agent("observer-1")],
            matrix_observers: vec![
                handoff_task::MatrixUserId::parse("@watcher:example.org").unwrap(),
            ],
            caller_workdir: false,
            permissions: Vec::new(),
            notify: false,
            completion: None,
            branch: Some("handoff/feature".to_owned()),
            base: Some("main".to_owned()),
            delivery: Some(handoff_task::Delivery::Push),
            repository: Some("/srv/repo".to_owned()),
            round: 1,
        },
        priority,
        workdir: "/tmp/work".into(),
        created_at: 1_000,
        idempotency_key: None,
        metadata: json!({ "ticket": 42, "tags": ["a", "b"] }),
        repeat_guard: None,
    }
}

pub(crate) fn key(key: &str, not_before: i64) -> IdempotencyClaim {
    IdempotencyClaim {
        key: key.into(),
        not_before,
    }
}

pub(crate) fn change(from: TaskStatus, to: TaskStatus, at: i64) -> StatusChange {
    StatusChange {
        from,
        to,
        at,
        exit: None,
        error: None,
        reason: format!("{from} -> {to}"),
    }
}

/// Approval `n`: ids and creation times grow with `n`.
pub(crate) fn approval(
    n: u32,
    agent_name: &str,
    scope: ApprovalScope,
    task: &TaskId,
    project: &str,
) -> Approval {
    Approval {
        id: format!("ap_{n:032x}"),
        agent_id: agent(agent_name),
        scope,
        task_id: task.clone(),
        project: project.into(),
        permission: "bash".into(),
        pattern: format!("cargo test --test t{n}"),
        created_at: i64::from(n) * 10,
    }
}

/// An audit record before the store numbers it (`seq` 0).
pub(crate) fn audit_record(at: i64, agent_name: &str, task: Option<&TaskId>) -> AuditRecord {
    AuditRecord {
        seq: 0,
        at,
        agent_id: Some(agent(agent_name)),
        task_id: task.cloned(),
        source: "executor".into(),
        subject: "bash".into(),
        outcome: "allow".into(),
        stage: "approval".into(),
        reason: format!("approved at {at}"),
        detail: json!({ "call": format!("call-{at}"), "rule": "bash(cargo *)" }),
    }
}

pub(crate) async fn insert<S: TaskStore>(store: &S, task: &NewTask) -> Task {
    match store.insert_task(task, None, ROOMY).await.unwrap() {
        InsertOutcome::Created(t) => t,
        other => panic!("expected Created, got {other:?}"),
    }
}

pub(crate) async fn status_of<S: TaskStore>(store: &S, id: &TaskId) -> TaskStatus {
    store.get_task(id).await.unwrap().unwrap().status
}

pub(crate) async fn event_count<S: TaskStore>(store: &S, id: &TaskId) -> u64 {
    store.events(id, 0, 1000).await.unwrap().1
}

pub(crate) async fn claim_all<S: TaskStore>(store: &S, limits: ClaimLimits) -> Vec<TaskId> {
    let mut ids = Vec::new();
    while let Some(t) = store.claim_next(limits, 5).await.unwrap() {
        ids.push(t.id);
    }
    ids
}
