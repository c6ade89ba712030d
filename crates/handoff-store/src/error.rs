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
    /// Filesystem error (creating the database directory, spilled artifacts).
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}
