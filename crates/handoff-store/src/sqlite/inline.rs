//! Point reads answered on the calling thread.
//!
//! sqlx runs every SQLite connection on a thread of its own, so each query is handed to that
//! thread and its rows handed back: two thread wake-ups, which cost more than the read itself
//! for the small reads agents poll (`get_task_status` is one task row and its latest events).
//! Those reads run here instead, through `rusqlite` connections to the same file, on the
//! thread that asks. They are bounded: each walks a primary key, the `(task_id, seq)` key or a
//! task index for at most [`MAX_ROWS`] rows, so the async worker they borrow is held for
//! microseconds. Reads that grow with the data (counts, event pages, exports, longer pages or
//! event windows) stay on sqlx's read pool.
//!
//! Nothing here waits: a connection has no busy timeout, so a read that meets a lock (another
//! process recovering the WAL) or fails in any other way inside SQLite is not answered here,
//! and the caller repeats it on the pool, which waits on its own thread and reports the error.
//! Rows that cannot be decoded are corruption, reported as they would be from the pool.
//!
//! In memory only: up to [`IDLE`] open connections (each with its prepared statements); they
//! are opened when first needed, `query_only`, and closed with the store.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
};

use rusqlite::{Connection, OpenFlags, Row, types::FromSql};

use crate::{
    StoreError,
    rows::{StoredRow, corrupt},
};

/// The most rows a read answered here may return: a `list_tasks` page or an event window
/// larger than this (an operator's export, the evaluator's long window) goes to the pool.
pub(super) const MAX_ROWS: u32 = 100;

/// Connections kept open between reads: one per thread that reads at the same moment.
const IDLE: usize = 8;

/// Why an inline read gave up.
#[derive(Debug)]
pub(super) enum Miss {
    /// SQLite could not answer here (a lock, an I/O error): read through the pool instead.
    Sqlite(rusqlite::Error),
    /// A row could not be decoded: the answer, as the pool would give it.
    Store(StoreError),
    /// The read found more than [`MAX_ROWS`] rows: read through the pool instead.
    Long,
}

impl From<rusqlite::Error> for Miss {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

impl From<StoreError> for Miss {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Read-only connections used on the calling thread; cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct InlineReads {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Set by [`InlineReads::close`]: no connection is opened after it.
    closed: AtomicBool,
}

impl InlineReads {
    /// Reads of the database at `path` (which must exist).
    pub(super) fn new(path: &Path) -> Self {
        Self {
            inner: Arc::new(Shared {
                path: path.to_path_buf(),
                idle: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// Runs `read` on an idle connection (opening one if none is idle). `None` means it could
    /// not be answered here and must be read through the pool.
    pub(super) fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, Miss>,
    ) -> Option<Result<T, StoreError>> {
        // A closed store answers as its closed pools do.
        if self.inner.closed.load(Ordering::Acquire) {
            return None;
        }
        let conn = match self.idle().pop() {
            Some(conn) => conn,
            None => match self.open() {
                Ok(conn) => conn,
                Err(e) => return self.missed(e),
            },
        };
        let answer = read(&conn);
        // A statement is reset when it goes back to the cache, so a connection is outside any
        // transaction here unless SQLite itself failed mid-read; such a one is not kept.
        if conn.is_autocommit() && !self.inner.closed.load(Ordering::Acquire) {
            let mut idle = self.idle();
            if idle.len() < IDLE {
                idle.push(conn);
            }
        }
        match answer {
            Ok(value) => Some(Ok(value)),
            Err(Miss::Store(e)) => Some(Err(e)),
            Err(Miss::Sqlite(e)) => self.missed(e),
            Err(Miss::Long) => None,
        }
    }

    /// Closes the idle connections (a store being closed).
    pub(super) fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.idle().clear();
    }

    fn missed<T>(&self, e: rusqlite::Error) -> Option<T> {
        tracing::debug!(error = %e, "an inline read was handed to the read pool");
        None
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Connection>> {
        // A panic while holding the lock cannot leave the list half-changed (push/pop/clear).
        self.inner.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open(&self) -> Result<Connection, rusqlite::Error> {
        // Not created here: the writer creates the file and sets WAL before any read.
        let conn = Connection::open_with_flags(
            &self.inner.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // No waiting on the calling thread: a lock hands the read to the pool.
        conn.busy_timeout(std::time::Duration::ZERO)?;
        conn.pragma_update(None, "query_only", true)?;
        Ok(conn)
    }
}

/// A row read with its statement's column names as listed in the query (a `*_columns!`
/// literal), so a column is found by comparing short static strings: rusqlite's own lookup by
/// name asks SQLite for every column's name and compares them case-insensitively, which was a
/// visible share of a status read.
pub(super) struct Named<'r, 's> {
    row: &'r Row<'s>,
    names: &'static [&'static str],
}

impl<'r, 's> Named<'r, 's> {
    /// `row`, whose columns are `names`, in order.
    pub(super) fn new(row: &'r Row<'s>, names: &'static [&'static str]) -> Self {
        Self { row, names }
    }

    /// One column; a type mismatch is corruption, as it is for sqlx's rows.
    fn column<T: FromSql>(&self, table: &'static str, name: &str) -> Result<T, StoreError> {
        let index = self
            .names
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| corrupt(table, format!("column `{name}` was not selected")))?;
        self.row
            .get(index)
            .map_err(|e| corrupt(table, format!("column `{name}`: {e}")))
    }
}

/// The column names of a `SELECT` list literal, in order.
pub(super) fn column_names(list: &'static str) -> Vec<&'static str> {
    list.split(',').map(str::trim).collect()
}

impl StoredRow for Named<'_, '_> {
    fn text(&self, table: &'static str, name: &str) -> Result<String, StoreError> {
        self.column(table, name)
    }
    fn text_opt(&self, table: &'static str, name: &str) -> Result<Option<String>, StoreError> {
        self.column(table, name)
    }
    fn int(&self, table: &'static str, name: &str) -> Result<i64, StoreError> {
        self.column(table, name)
    }
    fn int_opt(&self, table: &'static str, name: &str) -> Result<Option<i64>, StoreError> {
        self.column(table, name)
    }
    fn bytes_opt(&self, table: &'static str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.column(table, name)
    }
    fn flag(&self, table: &'static str, name: &str) -> Result<bool, StoreError> {
        self.column(table, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_select_list_literal_splits_into_its_names() {
        assert_eq!(
            column_names(crate::rows::task_columns!())[..3],
            ["queue_seq", "id", "agent_id"]
        );
        assert_eq!(column_names("a,b , c"), ["a", "b", "c"]);
    }
}
