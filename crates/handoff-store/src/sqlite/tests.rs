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
