//! The dialect-neutral statement layer both stores run their operations through (the shape of
//! riverqueue/river's drivers): a statement is SQL written with `?` placeholders plus its
//! values ([`Sql`], [`Arg`]); a connection of either database runs it ([`Conn`]) and returns
//! rows read through [`crate::rows::StoredRow`]. The operations in [`crate::ops`] are written
//! once against [`Conn`]; the little SQL that differs between SQLite and PostgreSQL is a
//! constant or method of the dialect's [`Conn`] implementation, beside its binding code.

mod args;

use async_trait::async_trait;

pub(crate) use args::Arg;

use crate::{StoreError, rows::StoredRow};

/// A statement: SQL with `?` placeholders and the values bound to them, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sql {
    text: String,
    args: Vec<Arg>,
}

impl Sql {
    /// A statement of `text`, nothing bound yet.
    pub(crate) fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            args: Vec::new(),
        }
    }

    /// Binds the next `?`.
    pub(crate) fn bind(mut self, value: impl Into<Arg>) -> Self {
        self.args.push(value.into());
        self
    }

    /// Appends SQL text (literals only: every value is bound).
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends `text` (ending in a `?`) and binds `value` to it.
    pub(crate) fn push_bind(&mut self, text: &str, value: impl Into<Arg>) -> &mut Self {
        self.text.push_str(text);
        self.args.push(value.into());
        self
    }

    /// Appends ` IN (?, ?, …)` binding each text; callers pass at least one.
    pub(crate) fn push_in<'a>(&mut self, values: impl IntoIterator<Item = &'a str>) -> &mut Self {
        self.text.push_str(" IN (");
        for (n, value) in values.into_iter().enumerate() {
            self.push_bind(if n == 0 { "?" } else { ", ?" }, value);
        }
        self.push(")")
    }

    /// The SQL text, placeholders as `?`.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The bound values, in order.
    pub(crate) fn args(&self) -> &[Arg] {
        &self.args
    }

    /// Runs it on `conn`; the number of rows it changed.
    pub(crate) async fn execute<C: Conn + ?Sized>(self, conn: &mut C) -> Result<u64, StoreError> {
        conn.execute(self).await
    }

    /// Runs it on `conn`; its rows.
    pub(crate) async fn fetch_all<C: Conn + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<Vec<C::Row>, StoreError> {
        conn.fetch_all(self).await
    }

    /// Runs it on `conn`; its first row, if any.
    pub(crate) async fn fetch_optional<C: Conn + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<Option<C::Row>, StoreError> {
        conn.fetch_optional(self).await
    }

    /// Runs it on `conn`; its first row, which must exist.
    pub(crate) async fn fetch_one<C: Conn + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<C::Row, StoreError> {
        conn.fetch_optional(self)
            .await?
            .ok_or_else(|| sqlx::Error::RowNotFound.into())
    }
}

/// A connection of one database dialect, running [`Sql`] statements; also the home of the SQL
/// that differs between the dialects.
#[async_trait]
pub(crate) trait Conn: Send {
    /// The rows it returns.
    type Row: StoredRow + Send;

    /// [`crate::fence::FENCE_OF`] as this dialect runs it inside a fenced write.
    const FENCE_OF: &'static str;
    /// Appended to the claim's pick of the next queued task.
    const CLAIM_PICK: &'static str;
    /// Stores or replaces an input request: binds `task_id`, `request_id`, `request`,
    /// `asked_at`, `expires_at`.
    const PUT_INPUT: &'static str;
    /// A task's open input requests, oldest first: binds `task_id`.
    const INPUTS_OF_TASK: &'static str;

    /// Runs a statement; the number of rows it changed.
    async fn execute(&mut self, sql: Sql) -> Result<u64, StoreError>;
    /// Runs a statement; its rows.
    async fn fetch_all(&mut self, sql: Sql) -> Result<Vec<Self::Row>, StoreError>;
    /// Runs a statement; its first row, if any (the statements fetched so return one row at
    /// most: a key's row, a `LIMIT 1`, one `RETURNING` row).
    async fn fetch_optional(&mut self, sql: Sql) -> Result<Option<Self::Row>, StoreError> {
        Ok(self.fetch_all(sql).await?.into_iter().next())
    }
    /// Holds the task a claim picked for the rest of the transaction (before its events are
    /// numbered), where the dialect needs more than the claim's own serialization.
    async fn hold_claimed(&mut self, id: &str) -> Result<(), StoreError>;
}
