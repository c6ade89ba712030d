//! [`Conn`] for PostgreSQL: `?` placeholders numbered (`$1`, `$2`, ...), and PostgreSQL's own
//! SQL for the few statements that differ from SQLite's.

use async_trait::async_trait;
use sqlx::{
    AssertSqlSafe, PgConnection, Postgres,
    postgres::{PgArguments, PgRow},
    query::Query,
};

use super::{locks, numbered};
use crate::{
    StoreError,
    sql::{Arg, Conn, Sql},
};

/// The sqlx query of `sql`, numbered, its values bound.
fn query(sql: Sql) -> Query<'static, Postgres, PgArguments> {
    // Safe: `Sql` text is built from the crate's literals only; every value is bound.
    let query = sqlx::query(AssertSqlSafe(numbered(sql.text())));
    sql.args().iter().cloned().fold(query, |q, arg| match arg {
        Arg::I64(v) => q.bind(v),
        Arg::I32(v) => q.bind(v),
        Arg::Text(v) => q.bind(v),
        Arg::Bool(v) => q.bind(v),
        Arg::Bytes(v) => q.bind(v),
    })
}

#[async_trait]
impl Conn for PgConnection {
    type Row = PgRow;

    // `FOR SHARE`: a takeover cannot commit between this check and the write's commit.
    const FENCE_OF: &'static str = "SELECT owner, fence FROM tasks WHERE id = ? FOR SHARE";
    // Another transaction's pick is skipped, not waited on.
    const CLAIM_PICK: &'static str = " FOR UPDATE OF t SKIP LOCKED";
    const PUT_INPUT: &'static str = "INSERT INTO input_requests \
         (task_id, request_id, request, asked_at, expires_at) VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT (task_id, request_id) DO UPDATE SET request = excluded.request, \
         asked_at = excluded.asked_at, expires_at = excluded.expires_at";
    const INPUTS_OF_TASK: &'static str = concat!(
        "SELECT ",
        crate::ops::inputs::pending_columns!(),
        " FROM input_requests WHERE task_id = ? ORDER BY asked_at, seq"
    );

    async fn execute(&mut self, sql: Sql) -> Result<u64, StoreError> {
        Ok(query(sql).execute(self).await?.rows_affected())
    }

    async fn fetch_all(&mut self, sql: Sql) -> Result<Vec<PgRow>, StoreError> {
        Ok(query(sql).fetch_all(self).await?)
    }

    async fn hold_claimed(&mut self, id: &str) -> Result<(), StoreError> {
        // Its events are numbered under its own lock (claims, then the task).
        locks::lock(self, crate::backend::Scope::Task(id)).await
    }
}
