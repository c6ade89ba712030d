//! Whether PostgreSQL answers, as the latest liveness probe found: kept in memory only, set and
//! cleared by [`PgStore::probe_reachable`] (the server probes twice a second), never by the
//! operations themselves. While the latest probe failed, every operation is refused at once
//! with that cause ([`StoreError::Unreachable`]) instead of each waiting out the pool's
//! acquire timeout: a call that makes several store operations still answers at once.
//!
//! The probe runs `SELECT 1` on a connection of its own, outside the pool, so a pool busy with
//! slow statements is not taken for an unreachable server; a failed probe connection is tried
//! once more fresh before the server counts as unreachable, so one session ended by the
//! server is not taken for an outage either.

use std::time::Duration;

use sqlx::{ConnectOptions, PgConnection, postgres::PgConnectOptions};
use tokio::sync::{Mutex, watch};

use super::PgStore;
use crate::StoreError;

/// The probe's connection and what it found; shared by the store's clones.
#[derive(Debug)]
pub(super) struct Reach {
    /// Why the latest probe failed, while it did.
    down: watch::Sender<Option<String>>,
    /// The probe's own session; `None` until the first probe and after a failed one.
    conn: Mutex<Option<PgConnection>>,
}

impl Default for Reach {
    fn default() -> Self {
        Self {
            down: watch::channel(None).0,
            conn: Mutex::new(None),
        }
    }
}

impl Reach {
    /// `Err` while the latest probe found the server unreachable.
    pub(super) fn check(&self) -> Result<(), StoreError> {
        match &*self.down.borrow() {
            Some(cause) => Err(StoreError::Unreachable(cause.clone())),
            None => Ok(()),
        }
    }

    /// Records a probe's outcome, logging only the changes.
    fn record(&self, outcome: &Result<(), String>) {
        let now = outcome.as_ref().err().cloned();
        let was_down = self.down.send_replace(now.clone()).is_some();
        match (was_down, now) {
            (false, Some(cause)) => tracing::warn!(error = %cause, "task store unreachable"),
            (true, None) => tracing::info!("task store reachable again"),
            _ => {}
        }
    }
}

impl PgStore {
    /// How long a liveness probe may take, connecting included, before the server counts as
    /// unreachable.
    pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

    /// Checks that the database answers (`SELECT 1`, within [`Self::PROBE_TIMEOUT`]) and remembers
    /// the answer: while the latest probe failed, every operation of this store (and its
    /// clones) is refused at once with [`StoreError::Unreachable`]. Without probes operations
    /// are never refused this way, only bounded by the pool's acquire timeout.
    pub async fn probe_reachable(&self) -> Result<(), StoreError> {
        let mut conn = self.reach.conn.lock().await;
        let options = self.pool.connect_options();
        let outcome = tokio::time::timeout(Self::PROBE_TIMEOUT, select_one(&mut conn, &options))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "no answer within {} ms",
                    Self::PROBE_TIMEOUT.as_millis()
                ))
            });
        if outcome.is_err() {
            // Cut off mid-statement, or broken: never reused.
            *conn = None;
        }
        self.reach.record(&outcome);
        outcome.map_err(StoreError::Unreachable)
    }
}

/// `SELECT 1` on the probe's session, opening it when there is none; a session that fails is
/// replaced by a fresh one once.
async fn select_one(
    slot: &mut Option<PgConnection>,
    options: &PgConnectOptions,
) -> Result<(), String> {
    if let Some(conn) = slot.as_mut() {
        if sqlx::query("SELECT 1").execute(&mut *conn).await.is_ok() {
            return Ok(());
        }
        *slot = None;
    }
    let mut conn = options.connect().await.map_err(|e| short(&e))?;
    sqlx::query("SELECT 1")
        .execute(&mut conn)
        .await
        .map_err(|e| short(&e))?;
    *slot = Some(conn);
    Ok(())
}

/// A probe's failure in a few words, without the server's address or credentials.
fn short(error: &sqlx::Error) -> String {
    crate::error::unreachable_cause(error).unwrap_or_else(|| match error {
        sqlx::Error::Database(db) => db.message().to_owned(),
        other => other.to_string(),
    })
}
