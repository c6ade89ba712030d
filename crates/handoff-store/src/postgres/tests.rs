//! The generic store conformance suite against a real PostgreSQL (each case on a database of
//! its own), and the PostgreSQL-specific pieces.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::{Connection, Executor, PgConnection};

use super::{PgStore, SessionLimits, numbered};

/// The limits the tests' stores run with: the default lease expiry.
pub(crate) const LIMITS: SessionLimits = SessionLimits {
    idle_in_transaction: std::time::Duration::from_secs(15),
};

/// Where the test server is: `scripts/postgres/up.sh` prints it, `scripts/test.sh` exports it.
pub(crate) fn server_url() -> String {
    match std::env::var("HANDOFF_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        // Never skipped: a missing server is a broken setup, not a passing test.
        _ => panic!(
            "HANDOFF_TEST_DATABASE_URL is not set: start a throw-away server with \
             scripts/postgres/up.sh and export the URL it prints"
        ),
    }
}

/// A fresh, empty database on the test server; returns its URL.
pub(crate) async fn fresh_database() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let server = server_url();
    let name = format!(
        "handoff_test_{}_{}_{}",
        std::process::id(),
        handoff_task::unix_millis_now(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = PgConnection::connect(&server)
        .await
        .expect("connect to the test server");
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("create a test database");
    admin.close().await.ok();
    let (base, query) = match server.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (server.as_str(), String::new()),
    };
    let root = base.rsplit_once('/').map_or(base, |(root, _)| root);
    format!("{root}/{name}{query}")
}

async fn open() -> (PgStore, ()) {
    let url = fresh_database().await;
    (
        PgStore::connect(&url, LIMITS).await.expect("open PgStore"),
        (),
    )
}

mod conformance {
    use super::open;

    crate::store_conformance!(open);
}

#[test]
fn placeholders_are_numbered_outside_string_literals() {
    assert_eq!(
        numbered("SELECT a FROM t WHERE b = ? AND c = '?' AND d IN (?, ?)"),
        "SELECT a FROM t WHERE b = $1 AND c = '?' AND d IN ($2, $3)"
    );
}

#[tokio::test]
async fn reopening_keeps_the_data_and_migrations_run_once() {
    use crate::TaskStore;
    let url = fresh_database().await;
    let first = PgStore::connect(&url, LIMITS).await.unwrap();
    let task = crate::conformance::support::new_task("agent-a", 0);
    first.insert_task(&task, None, 10).await.unwrap();
    first.close().await;
    let second = PgStore::connect(&url, LIMITS).await.unwrap();
    let read = second
        .get_task(&task.id)
        .await
        .unwrap()
        .expect("task survives");
    assert_eq!(read.description, task.description);
}

/// Two stores with pools of their own — two Handoff instances on one database — racing to
/// claim: the limits hold across them, and no task is claimed twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_from_two_instances_respect_the_limits_together() {
    use crate::{ClaimLimits, TaskStore};
    let url = fresh_database().await;
    let a = PgStore::connect(&url, LIMITS).await.unwrap();
    let b = PgStore::connect(&url, LIMITS).await.unwrap();
    for i in 0..20 {
        let task = crate::conformance::support::new_task(&format!("agent-{}", i % 4), 0);
        a.insert_task(&task, None, 100).await.unwrap();
    }
    let limits = ClaimLimits {
        max_active: 6,
        max_active_per_agent: 2,
    };
    let mut handles = Vec::new();
    for i in 0..24 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        handles.push(tokio::spawn(
            async move { store.claim_next(limits, 1).await },
        ));
    }
    let mut ids = std::collections::HashSet::new();
    let mut per_agent = std::collections::HashMap::<String, u32>::new();
    for h in handles {
        if let Some(task) = h.await.unwrap().unwrap() {
            assert!(ids.insert(task.id.clone()), "{} claimed twice", task.id);
            *per_agent
                .entry(task.agent_id.as_str().to_owned())
                .or_default() += 1;
        }
    }
    assert_eq!(ids.len(), 6, "{per_agent:?}");
    assert!(per_agent.values().all(|&n| n <= 2), "{per_agent:?}");
}

/// One rescuer per database: the first instance to ask holds the duty for its term and renews
/// it; the others are told no until a term runs out unrenewed, then one of them takes it.
#[tokio::test]
async fn one_rescuer_at_a_time() {
    use crate::InstanceStore;
    let url = fresh_database().await;
    let a = PgStore::connect(&url, LIMITS).await.unwrap();
    let b = PgStore::connect(&url, LIMITS).await.unwrap();
    assert!(a.rescuer_lock("a", 1_000, 2_000).await.unwrap());
    assert!(a.rescuer_lock("a", 1_500, 2_500).await.unwrap(), "renewed");
    assert!(
        !b.rescuer_lock("b", 2_000, 3_000).await.unwrap(),
        "a's term runs"
    );
    // a falls silent (dead, or cut off): its term ends, b takes the duty.
    assert!(b.rescuer_lock("b", 2_600, 3_600).await.unwrap());
    assert!(
        !a.rescuer_lock("a", 2_700, 3_700).await.unwrap(),
        "a is back: b's now"
    );
}

/// An instance stuck inside a write about a task (cut off from the database mid-transaction)
/// holds that task's lock; the server ends its session after the idle limit, so the other
/// instances' writes about the task go on, and the stuck one's transaction is lost rather than
/// committed late.
#[tokio::test]
async fn a_session_stuck_inside_a_write_is_ended_and_its_lock_released() {
    use crate::TaskStore;
    use handoff_task::{EventKind, NewEvent};
    let url = fresh_database().await;
    let short = SessionLimits {
        idle_in_transaction: std::time::Duration::from_millis(300),
    };
    let stuck = PgStore::connect(&url, short).await.unwrap();
    let other = PgStore::connect(&url, LIMITS).await.unwrap();
    let task = crate::conformance::support::new_task("agent-a", 0);
    other.insert_task(&task, None, 10).await.unwrap();
    let tx = crate::backend::begin_task(&stuck, &task.id).await.unwrap();
    // Without the limit this waits for the lock until TCP gives up on the stuck session.
    let appended = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        other.append_events(&task.id, 1, &[NewEvent::new(EventKind::Log, "go on")]),
    )
    .await
    .expect("the task's lock was released");
    appended.unwrap();
    assert!(
        tx.commit().await.is_err(),
        "the stuck transaction committed"
    );
}

/// Writes about different tasks never wait on each other: one task's lock held open leaves
/// another task's writes, submissions and claims free.
#[tokio::test]
async fn writes_about_different_tasks_do_not_wait_on_each_other() {
    use crate::TaskStore;
    use handoff_task::{EventKind, NewEvent};
    let url = fresh_database().await;
    let store = PgStore::connect(&url, LIMITS).await.unwrap();
    let held = crate::conformance::support::new_task("agent-a", 0);
    let free = crate::conformance::support::new_task("agent-b", 1);
    store.insert_task(&held, None, 10).await.unwrap();
    let tx = crate::backend::begin_task(&store, &held.id).await.unwrap();
    let within = std::time::Duration::from_secs(5);
    tokio::time::timeout(within, async {
        store.insert_task(&free, None, 10).await.unwrap();
        store
            .append_events(&free.id, 2, &[NewEvent::new(EventKind::Log, "free")])
            .await
            .unwrap();
    })
    .await
    .expect("another task's writes went on");
    drop(tx);
}
