use sqlx::error::DatabaseError as _;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened, migrated or queried.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored row could not be turned back into a domain value.
    #[error("corrupt row in `{table}`: {message}")]
    Corrupt {
        /// Table name.
        table: &'static str,
        /// What was wrong.
        message: String,
    },
    /// This instance lost the task (its lease was taken over): the write was refused and
    /// nothing changed; the run must stop.
    #[error("task {task}: this instance no longer holds its lease; the write was refused")]
    Fenced {
        /// The task.
        task: String,
    },
    /// The caller asked for something the store cannot hold (a value too large).
    #[error("{0}")]
    TooLarge(String),
    /// Refused at once, without trying: the store's latest liveness probe found the database
    /// unreachable (see [`crate::PgStore::probe_reachable`]); the text is the probe's cause.
    #[error("the database is unreachable: {0}")]
    Unreachable(String),
    /// Filesystem error (creating the database directory, spilled artifacts).
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// PostgreSQL's SQLSTATEs that mean the server cannot be used right now, whatever was asked: a
/// lost connection (class 08), a server shutting down or starting (57P01–57P03), one at its
/// connection limit (53300).
const PG_UNREACHABLE: [&str; 4] = ["57P01", "57P02", "57P03", "53300"];

/// SQLite's primary result codes that mean the file cannot be used right now: READONLY, IOERR,
/// CANTOPEN (the file or its directory unwritable, unreadable or gone).
const SQLITE_UNREACHABLE: [i32; 3] = [8, 10, 14];

impl StoreError {
    /// Whether the store could not be reached, or its file could not be used, so nothing was
    /// done for this request (or, for a write cut off in flight, nothing can be known of it)
    /// and the same request may succeed later: a refused, lost or timed-out connection, a
    /// closed pool, TLS or protocol trouble, a server shutting down, an unwritable or
    /// unreadable SQLite file. Refusals of the request itself (a constraint, a fenced write, a
    /// corrupt row) are not.
    pub fn is_unreachable(&self) -> bool {
        self.unreachable_cause().is_some()
    }

    /// Why the store is unreachable, in a few words without the database's address or
    /// credentials, when [`Self::is_unreachable`].
    pub fn unreachable_cause(&self) -> Option<String> {
        match self {
            Self::Unreachable(cause) => Some(cause.clone()),
            Self::Database(error) => unreachable_cause(error),
            _ => None,
        }
    }
}

/// [`StoreError::unreachable_cause`] of a database error.
pub(crate) fn unreachable_cause(error: &sqlx::Error) -> Option<String> {
    match error {
        sqlx::Error::Io(e) => Some(e.to_string()),
        sqlx::Error::PoolTimedOut => Some("no database connection could be had in time".into()),
        sqlx::Error::PoolClosed => Some("the connection pool is closed".into()),
        sqlx::Error::Tls(e) => Some(format!("TLS: {e}")),
        sqlx::Error::Protocol(e) => Some(format!("protocol error: {e}")),
        sqlx::Error::WorkerCrashed => Some("the database worker thread crashed".into()),
        sqlx::Error::Database(db) => {
            unreachable_database(db.as_ref()).then(|| db.message().to_owned())
        }
        _ => None,
    }
}

/// Whether a database's own error says it cannot be used right now (see the two lists above).
fn unreachable_database(db: &dyn sqlx::error::DatabaseError) -> bool {
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        let code = pg.code();
        return code.starts_with("08") || PG_UNREACHABLE.contains(&code);
    }
    if let Some(sqlite) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
        return sqlite
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| SQLITE_UNREACHABLE.contains(&(code & 0xff)));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_of_reaching_the_store_are_unreachable() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let unreachable = [
            StoreError::Database(sqlx::Error::Io(refused)),
            StoreError::Database(sqlx::Error::PoolTimedOut),
            StoreError::Database(sqlx::Error::PoolClosed),
            StoreError::Database(sqlx::Error::Protocol("unexpected message".into())),
            StoreError::Unreachable("no answer within 1000 ms".into()),
        ];
        for error in &unreachable {
            assert!(error.is_unreachable(), "{error}");
        }
        let refusals = [
            StoreError::Database(sqlx::Error::RowNotFound),
            StoreError::Fenced { task: "t".into() },
            StoreError::TooLarge("too big".into()),
            StoreError::Corrupt {
                table: "tasks",
                message: "bad".into(),
            },
        ];
        for error in &refusals {
            assert!(!error.is_unreachable(), "{error}");
        }
        assert_eq!(
            unreachable[4].unreachable_cause().as_deref(),
            Some("no answer within 1000 ms")
        );
    }
}
