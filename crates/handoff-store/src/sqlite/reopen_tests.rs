//! A writer connection that SQLite opened while the database file could not be written stays
//! read-only for good: it must be replaced once the file can be written again, not keep every
//! write failing until a restart (issue 39).
//!
//! The fault is real: the file and its WAL files are made read-only (mode 0444) while the store
//! is open. Root ignores file modes, so as root the test runs itself again as `nobody`.

use std::{os::unix::fs::PermissionsExt, path::Path};

use tempfile::TempDir;

use super::SqliteStore;
use crate::{
    StoreError, TaskStore,
    conformance::support::{ROOMY, insert, new_task},
};

/// Set in the child process: the directory the child works in.
const CHILD_DIR: &str = "HANDOFF_STORE_TEST_READONLY_DIR";

/// `nobody` on Debian and most distributions.
const NOBODY: u32 = 65534;

#[test]
fn a_write_after_the_file_was_read_only_reopens_the_writer() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        return run(read_only_and_back(Path::new(&dir)));
    }
    let dir = TempDir::new().unwrap();
    if !nix::unistd::geteuid().is_root() {
        return run(read_only_and_back(dir.path()));
    }
    nobody_runs_this_test(dir.path());
}

fn run(test: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(test);
}

/// Runs this test again as `nobody`, in `dir` (handed over to it), and asserts it passed.
fn nobody_runs_this_test(dir: &Path) {
    use std::os::unix::process::CommandExt;
    let nobody = nix::unistd::Uid::from_raw(NOBODY);
    nix::unistd::chown(dir, Some(nobody), None).unwrap();
    // A copy `nobody` can reach: the checkout (and its target dir) may sit under a home only
    // root may enter.
    let exe = dir.join("store-tests");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(&exe)
        .args([
            "--exact",
            "sqlite::reopen_tests::a_write_after_the_file_was_read_only_reopens_the_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

/// Sets `mode` on the database file and its WAL and shared-memory files.
fn set_mode(db: &Path, mode: u32) {
    for suffix in ["", "-wal", "-shm"] {
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

async fn read_only_and_back(dir: &Path) {
    let db = dir.join("handoff.db");
    let store = SqliteStore::open(&db).await.unwrap();
    insert(&store, &new_task("agent-a", 0)).await;

    set_mode(&db, 0o444);
    // The pool retires its writer now and then (its lifetime, an idle timeout, a connection
    // left inside a failed transaction); the one it opens next finds the file read-only.
    store.write.acquire().await.unwrap().close().await.unwrap();
    let err = store
        .insert_task(&new_task("agent-a", 0), None, ROOMY)
        .await
        .unwrap_err();
    assert!(is_read_only(&err), "{err}");
    assert!(store.write_fault().is_some());

    set_mode(&db, 0o644);
    // Nothing reopens the store from outside: the next write succeeds on its own.
    insert(&store, &new_task("agent-a", 0)).await;
    assert_eq!(store.write_fault(), None);
    store.close().await;
}

/// Whether `err` is SQLite's "attempt to write a readonly database" (SQLITE_READONLY*).
fn is_read_only(err: &StoreError) -> bool {
    let StoreError::Database(sqlx::Error::Database(db)) = err else {
        return false;
    };
    db.code()
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == 8)
}
