//! Whether the store's writes work: the fault of the latest failed write (disk full, I/O
//! error…), kept in memory until a write succeeds again, for readiness checks to watch; and
//! whether the writer connection must be replaced before the next write.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use sqlx::error::DatabaseError as _;
use tokio::sync::watch;

use crate::StoreError;

/// SQLite's primary result codes that mean the storage failed, not the request: BUSY (another
/// process held the lock past the timeout), NOMEM, READONLY, IOERR, CORRUPT, FULL, CANTOPEN,
/// NOTADB. A constraint failure, say, is the caller's and says nothing about the disk.
const STORAGE_CODES: [i32; 8] = [5, 7, 8, 10, 11, 13, 14, 26];

/// The primary codes after which the writer connection is replaced: READONLY, IOERR, CANTOPEN.
/// A connection SQLite opened while the file could not be written is read-only for good, and
/// one that saw an I/O error may keep stale state; a fresh one works once the file does.
const REOPEN_CODES: [i32; 3] = [8, 10, 14];

/// The last write fault, shared by the store's clones.
#[derive(Debug, Clone)]
pub(super) struct WriteHealth {
    fault: Arc<watch::Sender<Option<String>>>,
    /// Set by a write that failed with one of [`REOPEN_CODES`]; taken by the writer pool.
    reopen: Arc<AtomicBool>,
}

impl WriteHealth {
    pub(super) fn new() -> Self {
        Self {
            fault: Arc::new(watch::channel(None).0),
            reopen: Arc::default(),
        }
    }

    /// Whether the writer connection must be replaced before its next use; clears the request.
    pub(super) fn take_reopen(&self) -> bool {
        self.reopen.swap(false, Ordering::AcqRel)
    }

    /// Records how a write ended: a storage fault marks writes as failing (logged once, when
    /// they start failing), a success clears it, any other error leaves things as they were.
    pub(super) fn note<T>(&self, result: &Result<T, StoreError>) {
        match result {
            Ok(_) => {
                let cleared = self.fault.send_if_modified(|fault| fault.take().is_some());
                if cleared {
                    tracing::info!("task store writes succeed again");
                }
            }
            Err(error) if is_storage_fault(error) => {
                if sqlite_code(error).is_some_and(|code| REOPEN_CODES.contains(&code)) {
                    self.reopen.store(true, Ordering::Release);
                }
                let text = error.to_string();
                let first = self.fault.send_if_modified(|fault| {
                    let first = fault.is_none();
                    *fault = Some(text.clone());
                    first
                });
                if first {
                    tracing::error!(error = %text, "task store writes are failing");
                } else {
                    tracing::warn!(error = %text, "task store write failed");
                }
            }
            Err(_) => {}
        }
    }

    /// The latest write fault, while writes fail.
    pub(super) fn fault(&self) -> Option<String> {
        self.fault.borrow().clone()
    }

    /// Follows [`Self::fault`].
    pub(super) fn subscribe(&self) -> watch::Receiver<Option<String>> {
        self.fault.subscribe()
    }
}

/// SQLite's primary result code of a database error.
fn sqlite_code(error: &StoreError) -> Option<i32> {
    let StoreError::Database(sqlx::Error::Database(db)) = error else {
        return None;
    };
    let code = db.try_downcast_ref::<sqlx::sqlite::SqliteError>()?.code()?;
    code.parse::<i32>().ok().map(|code| code & 0xff)
}

/// Whether `error` says the storage itself failed rather than the request.
fn is_storage_fault(error: &StoreError) -> bool {
    if sqlite_code(error).is_some_and(|code| STORAGE_CODES.contains(&code)) {
        return true;
    }
    matches!(
        error,
        StoreError::Database(
            sqlx::Error::Io(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::WorkerCrashed
                | sqlx::Error::InvalidSavePointStatement
                | sqlx::Error::BeginFailed
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_error() -> StoreError {
        StoreError::Database(sqlx::Error::Io(std::io::Error::other("no space left")))
    }

    #[test]
    fn a_fault_is_kept_until_a_write_succeeds() {
        let health = WriteHealth::new();
        let mut watch = health.subscribe();
        health.note(&Err::<(), _>(io_error()));
        assert!(watch.has_changed().unwrap());
        assert!(
            health.fault().unwrap().contains("no space left"),
            "{:?}",
            health.fault()
        );
        watch.borrow_and_update();
        // A refused request is not a storage fault either way.
        health.note(&Err::<(), _>(StoreError::Database(
            sqlx::Error::RowNotFound,
        )));
        assert!(health.fault().is_some());
        health.note(&Ok(()));
        assert_eq!(health.fault(), None);
        assert!(watch.has_changed().unwrap());
        watch.borrow_and_update();
        health.note(&Err::<(), _>(StoreError::Database(
            sqlx::Error::RowNotFound,
        )));
        health.note(&Ok(()));
        assert!(!watch.has_changed().unwrap(), "nothing changed");
    }
}
