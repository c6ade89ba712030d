//! [`Conn`] for SQLite: statements run as written (SQLite reads `?` itself), and SQLite's own
//! SQL for the few statements that differ from PostgreSQL's.

use async_trait::async_trait;
use sqlx::{
    AssertSqlSafe, Sqlite, SqliteConnection,
    query::Query,
    sqlite::{SqliteArguments, SqliteRow},
};

use crate::{
    StoreError,
    fence::FENCE_OF,
    sql::{Arg, Conn, Sql},
};

/// The sqlx query of `sql`, its values bound.
fn query(sql: Sql) -> Query<'static, Sqlite, SqliteArguments> {
    // Safe: `Sql` text is built from the crate's literals only; every value is bound.
    let query = sqlx::query(AssertSqlSafe(sql.text().to_owned()));
    sql.args().iter().cloned().fold(query, |q, arg| match arg {
        Arg::I64(v) => q.bind(v),
        Arg::I32(v) => q.bind(v),
        Arg::Text(v) => q.bind(v),
        Arg::Bool(v) => q.bind(v),
        Arg::Bytes(v) => q.bind(v),
    })
}

#[async_trait]
impl Conn for SqliteConnection {
    type Row = SqliteRow;

    // One writer at a time: the row cannot change before the write commits.
    const FENCE_OF: &'static str = FENCE_OF;
    // Claims are serialized by the single writer already.
    const CLAIM_PICK: &'static str = "";
    // Replacing gives the request a new rowid, which orders it as asked anew.
    const PUT_INPUT: &'static str = "INSERT OR REPLACE INTO input_requests \
         (task_id, request_id, request, asked_at, expires_at) VALUES (?, ?, ?, ?, ?)";
    const INPUTS_OF_TASK: &'static str = concat!(
        "SELECT ",
        crate::ops::inputs::pending_columns!(),
        " FROM input_requests WHERE task_id = ? ORDER BY asked_at, rowid"
    );

    async fn execute(&mut self, sql: Sql) -> Result<u64, StoreError> {
        Ok(query(sql).execute(self).await?.rows_affected())
    }

    async fn fetch_all(&mut self, sql: Sql) -> Result<Vec<SqliteRow>, StoreError> {
        Ok(query(sql).fetch_all(self).await?)
    }

    async fn hold_claimed(&mut self, _id: &str) -> Result<(), StoreError> {
        Ok(())
    }
}
