//! What each write transaction serializes on, and nothing more: transaction-scoped advisory
//! locks, one namespace per kind of check, keyed by the row or key the check reads. Writes
//! about different tasks, agents or keys never wait on each other.
//!
//! - A task's writes (state compare-and-set, event numbering, fencing, its open requests) hold
//!   [`Scope::Task`]; the fence check also reads the row `FOR SHARE`, so a takeover (one
//!   `UPDATE`) cannot commit between a fenced write's check and its commit.
//! - Claims hold [`Scope::Claims`]: only claims add active tasks, so serializing claims among
//!   themselves keeps `max_active` and the per-agent limit exact; the claimed row is then held
//!   under its [`Scope::Task`] (order: claims, then the task).
//! - A submission holds a lock per idempotency key and per repeat-guard key it checks (never
//!   the whole agent), and the backlog cap through [`Scope::Admission`]: shared while the queue
//!   is at least `max_connections` below the cap — each admitted submission adds one task and
//!   at most `max_connections` are in flight, so the cap holds without waiting on each other —
//!   exclusive near it, where submissions are counted one at a time.
//!
//! Lock order, so no two transactions wait on each other in a circle: keys, then admission;
//! claims, then a task. Nothing here is durable: the locks end with their transaction.

use sqlx::PgConnection;

use crate::{StoreError, backend::Scope};

/// The namespaces of the locks (the first key of `pg_advisory_xact_lock(int, int)`).
const TASK: i32 = 1;
const IDEMPOTENCY: i32 = 2;
const REPEAT: i32 = 3;
const CALLS: i32 = 4;
const CLAIMS: i32 = 5;
const SWEEP: i32 = 6;
const ADMISSION: i32 = 7;

/// The lock `scope` takes: its namespace and key; `None` for a write that checks nothing.
fn key(scope: Scope<'_>) -> Option<(i32, &str)> {
    match scope {
        Scope::Task(id) => Some((TASK, id)),
        Scope::Calls(caller) => Some((CALLS, caller)),
        Scope::Claims => Some((CLAIMS, "claims")),
        Scope::Sweep => Some((SWEEP, "sweep")),
        Scope::Plain => None,
    }
}

/// Takes `scope`'s lock, if it has one, for the rest of the transaction on `conn`.
pub(super) async fn lock(conn: &mut PgConnection, scope: Scope<'_>) -> Result<(), StoreError> {
    let Some((namespace, key)) = key(scope) else {
        return Ok(());
    };
    sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
        .bind(namespace)
        .bind(key)
        .execute(conn)
        .await?;
    Ok(())
}

/// Takes a submission's locks in one round trip, in lock order: its idempotency key's and its
/// repeat-guard key's (each [`agent_key`]), then the backlog admission lock (`exclusive` near
/// the cap, else shared).
pub(super) async fn submission(
    conn: &mut PgConnection,
    idempotency: Option<&str>,
    repeat: Option<&str>,
    exclusive: bool,
) -> Result<(), StoreError> {
    let mut locks = Vec::with_capacity(3);
    let mut keys = Vec::with_capacity(2);
    for (namespace, key) in [(IDEMPOTENCY, idempotency), (REPEAT, repeat)] {
        if let Some(key) = key {
            keys.push(key);
            locks.push(format!(
                "pg_advisory_xact_lock({namespace}, hashtext(${}))",
                keys.len()
            ));
        }
    }
    locks.push(if exclusive {
        format!("pg_advisory_xact_lock({ADMISSION}, 0)")
    } else {
        format!("pg_advisory_xact_lock_shared({ADMISSION}, 0)")
    });
    // PostgreSQL evaluates a select list left to right: the locks are taken in this order.
    let sql = format!("SELECT {}", locks.join(", "));
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for key in keys {
        query = query.bind(key);
    }
    query.execute(conn).await?;
    Ok(())
}

/// The key of an agent's idempotency or repeat-guard lock (agent ids hold no `:`; a hash
/// collision only makes two submissions wait on each other).
pub(super) fn agent_key(agent: &str, key: &str) -> String {
    format!("{agent}:{key}")
}
