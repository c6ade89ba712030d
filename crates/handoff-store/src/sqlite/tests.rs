//! SQLite's run of the store conformance suite, and what only holds for SQLite: the file,
//! the read-only pool, raw rows.

use handoff_task::{EventKind, NewEvent, TaskStatus};
use tempfile::TempDir;

use super::SqliteStore;
use crate::{
    StoreError, TaskStore,
    conformance::support::{ROOMY, WIDE, change, event_count, insert, key, new_task},
};

async fn open() -> (SqliteStore, TempDir) {
    let dir = TempDir::new().unwrap();
    let store = SqliteStore::open(&dir.path().join("nested/handoff.db"))
        .await
        .unwrap();
    (store, dir)
}

crate::store_conformance!(open);

#[tokio::test]
async fn data_survives_reopening_the_file() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("handoff.db");
    let task = new_task("agent-a", 0);
    {
        let store = SqliteStore::open(&path).await.unwrap();
        store.insert_task(&task, None, ROOMY).await.unwrap();
        store
            .append_events(&task.id, 2, &[NewEvent::new(EventKind::Log, "kept")])
            .await
            .unwrap();
        store.close().await;
    }
    {
        // Dropped without close: committed WAL frames must still be there.
        let store = SqliteStore::open(&path).await.unwrap();
        store.claim_next(WIDE, 3).await.unwrap().unwrap();
    }
    let store = SqliteStore::open(&path).await.unwrap();
    let got = store.get_task(&task.id).await.unwrap().unwrap();
    assert_eq!(got.status, TaskStatus::Running);
    assert_eq!(got.description, task.description);
    assert_eq!(event_count(&store, &task.id).await, 3);
    // Seq numbering continues after a restart.
    let seqs = store
        .append_events(&task.id, 4, &[NewEvent::new(EventKind::Log, "more")])
        .await
        .unwrap();
    assert_eq!(seqs, vec![4]);
}

#[tokio::test]
async fn corrupt_rows_are_reported_not_panicked() {
    let (store, _dir) = open().await;
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let other = insert(&store, &new_task("agent-a", 0)).await;

    sqlx::query("UPDATE tasks SET status = 'done' WHERE id = ?")
        .bind(task.id.as_str())
        .execute(&store.write)
        .await
        .unwrap();
    let err = store.get_task(&task.id).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt { table: "tasks", .. }),
        "{err:?}"
    );
    assert!(store.count_by_status().await.is_err());

    sqlx::query("UPDATE tasks SET options = 'not json' WHERE id = ?")
        .bind(other.id.as_str())
        .execute(&store.write)
        .await
        .unwrap();
    let err = store.get_task(&other.id).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");

    sqlx::query("UPDATE task_events SET kind = 'bogus', data = '{' WHERE task_id = ?")
        .bind(other.id.as_str())
        .execute(&store.write)
        .await
        .unwrap();
    let err = store.events(&other.id, 0, 10).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                table: "task_events",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn read_pool_refuses_writes() {
    let (store, _dir) = open().await;
    let result = sqlx::query("DELETE FROM tasks").execute(&store.read).await;
    assert!(result.is_err());
}

// The conformance purge case can only see that the key is free again; here the row itself
// must be gone, or purged keys would pile up forever.
#[tokio::test]
async fn purge_deletes_the_idempotency_key_rows() {
    let (store, _dir) = open().await;
    let mut old = new_task("agent-a", 0);
    old.idempotency_key = Some("old".into());
    store
        .insert_task(&old, Some(&key("old", 0)), ROOMY)
        .await
        .unwrap();
    store
        .set_status(
            &old.id,
            &change(TaskStatus::Queued, TaskStatus::Cancelled, 100),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.purge_terminal(500, 10).await.unwrap().len(), 1);
    let keys: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM idempotency_keys")
        .fetch_one(&store.read)
        .await
        .unwrap();
    assert_eq!(keys, 0);
}

/// SQLite's plan for a `list_tasks` query, one detail line per step.
async fn list_plan(store: &SqliteStore, filter: &crate::TaskFilter) -> Vec<String> {
    use crate::sql::Conn;
    use sqlx::Row;
    let query = crate::ops::task_list::list_query("EXPLAIN QUERY PLAN ", filter);
    let mut conn = store.read.acquire().await.unwrap();
    let rows = conn.fetch_all(query).await.unwrap();
    rows.iter().map(|row| row.get::<String, _>(3)).collect()
}

// With only (agent_id, queue_seq) a status filter visited every task the agent ever had
// (100k tasks: p50 0.22 s); the plan must reach the asked states through the index.
#[tokio::test]
async fn status_filtered_listing_uses_the_agent_status_index() {
    let (store, _dir) = open().await;
    for n in 0..50 {
        let task = insert(&store, &new_task("agent-a", 0)).await;
        if n % 10 != 0 {
            store
                .set_status(
                    &task.id,
                    &change(TaskStatus::Queued, TaskStatus::Cancelled, 9),
                )
                .await
                .unwrap()
                .unwrap();
        }
    }
    for statuses in [
        vec![TaskStatus::Running],
        vec![TaskStatus::Queued, TaskStatus::Running, TaskStatus::Paused],
    ] {
        // A text filter is checked on the rows the same walk visits.
        for (before_seq, text) in [(None, None), (Some(40), None), (Some(40), Some("fix"))] {
            let filter = crate::TaskFilter {
                agent_id: Some(crate::conformance::support::agent("agent-a")),
                statuses: statuses.clone(),
                limit: 20,
                before_seq,
                text: text.map(str::to_owned),
            };
            let plan = list_plan(&store, &filter).await;
            let searches: Vec<&String> = plan
                .iter()
                .filter(|step| step.starts_with("SEARCH") || step.starts_with("SCAN tasks"))
                .collect();
            assert_eq!(searches.len(), statuses.len(), "{plan:?}");
            assert!(
                searches.iter().all(|step| step.starts_with(
                    "SEARCH tasks USING INDEX tasks_agent_status (agent_id=? AND status=?"
                )),
                "{statuses:?} {before_seq:?}: {plan:?}"
            );
        }
    }
}

// A text filter cannot use an index, but a page must still be the first rows of a
// newest-first index walk, for an agent and for an operator (every agent: the dashboard), with
// a state or without: no sort of every matching task before the first row comes back (an
// operator's state filter read and sorted every task in that state: 100k completed, ~110 ms).
#[tokio::test]
async fn listings_walk_newest_first_without_sorting() {
    let (store, _dir) = open().await;
    for agent_id in [None, Some(crate::conformance::support::agent("agent-a"))] {
        for statuses in [vec![], vec![TaskStatus::Completed]] {
            for text in [None, Some("fix".to_owned())] {
                let filter = crate::TaskFilter {
                    agent_id: agent_id.clone(),
                    statuses: statuses.clone(),
                    limit: 50,
                    before_seq: Some(1000),
                    text,
                };
                let plan = list_plan(&store, &filter).await;
                assert!(
                    !plan.iter().any(|step| step.contains("TEMP B-TREE")),
                    "{filter:?}: {plan:?}"
                );
                if agent_id.is_none() && !filter.statuses.is_empty() {
                    assert!(
                        plan.iter()
                            .any(|step| step.contains("USING INDEX tasks_status_seq")),
                        "{plan:?}"
                    );
                }
            }
        }
    }
}

/// Set in the child process of `a_failed_commit_leaves_the_store_usable`.
const FSIZE_CHILD: &str = "HANDOFF_STORE_TEST_FSIZE_CHILD";

// A COMMIT that fails on a full disk or an I/O error is rolled back by SQLite itself while sqlx
// still counted the transaction as open: every later write failed with "attempted to call
// begin_with at non-zero transaction depth" until a restart. The child process caps its own
// file size (RLIMIT_FSIZE, SIGXFSZ ignored) so the WAL cannot grow: a real failed commit, in a
// process of its own because the limit holds for every thread.
#[test]
fn a_failed_commit_leaves_the_store_usable() {
    if std::env::var_os(FSIZE_CHILD).is_some() {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(failed_commit_in_a_size_capped_process());
    }
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(r#"trap '' XFSZ; exec "$0" "$@""#)
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sqlite::tests::a_failed_commit_leaves_the_store_usable",
            "--nocapture",
        ])
        .env(FSIZE_CHILD, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

/// The child's part of `a_failed_commit_leaves_the_store_usable`.
async fn failed_commit_in_a_size_capped_process() {
    use nix::sys::resource::{Resource::RLIMIT_FSIZE, getrlimit, setrlimit};
    let (store, dir) = open().await;
    let first = insert(&store, &new_task("agent-a", 0)).await;
    let wal = std::fs::metadata(dir.path().join("nested/handoff.db-wal"))
        .unwrap()
        .len();
    let (_, hard) = getrlimit(RLIMIT_FSIZE).unwrap();
    setrlimit(RLIMIT_FSIZE, wal + 1024, hard).unwrap();

    let mut big = new_task("agent-a", 0);
    big.description = "x".repeat(64 * 1024);
    let err = store.insert_task(&big, None, ROOMY).await.unwrap_err();
    assert!(err.to_string().contains("disk I/O error"), "{err}");
    let fault = store.write_fault().unwrap();
    assert!(fault.contains("disk I/O error"), "{fault}");
    // While the disk stays full, writes fail for that reason, not a leftover transaction.
    for _ in 0..2 {
        let err = store.insert_task(&big, None, ROOMY).await.unwrap_err();
        assert!(err.to_string().contains("disk I/O error"), "{err}");
        assert!(store.probe_writes().await.is_err());
    }
    assert!(store.write_fault().is_some());

    setrlimit(RLIMIT_FSIZE, hard, hard).unwrap();
    store.probe_writes().await.unwrap();
    assert_eq!(store.write_fault(), None);
    insert(&store, &big).await;
    store
        .append_events(&first.id, 3, &[NewEvent::new(EventKind::Log, "after")])
        .await
        .unwrap();
    store.claim_next(WIDE, 4).await.unwrap().unwrap();
    assert_eq!(event_count(&store, &first.id).await, 3);
}

// SQLite's own page limit stands in for a full disk: the failed write names the cause, writes
// are reported failing until one succeeds again.
#[tokio::test]
async fn a_full_database_is_named_and_reported_until_writes_succeed() {
    let (store, _dir) = open().await;
    let mut faults = store.write_faults();
    insert(&store, &new_task("agent-a", 0)).await;
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(&store.write)
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "PRAGMA max_page_count = {pages}"
    )))
    .execute(&store.write)
    .await
    .unwrap();
    let mut big = new_task("agent-a", 0);
    big.description = "x".repeat(64 * 1024);
    let err = store.insert_task(&big, None, ROOMY).await.unwrap_err();
    assert!(
        err.to_string().contains("database or disk is full"),
        "{err}"
    );
    assert!(faults.has_changed().unwrap());
    let seen = faults.borrow_and_update().clone().unwrap();
    assert!(seen.contains("database or disk is full"), "{seen}");

    sqlx::query("PRAGMA max_page_count = 1073741823")
        .execute(&store.write)
        .await
        .unwrap();
    insert(&store, &big).await;
    assert!(faults.has_changed().unwrap());
    assert_eq!(*faults.borrow_and_update(), None);
    assert_eq!(store.write_fault(), None);
}
