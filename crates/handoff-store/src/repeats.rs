//! The loop guards' SQL, shared by both stores (written with `?`: the PostgreSQL store numbers
//! the placeholders). `execute_task`'s is judged inside the insert's write transaction, so
//! identical submissions racing on several instances count each other; the pipeline's records
//! each caller's calls under the same write lock.

use std::sync::LazyLock;

use handoff_task::{RepeatGuard, TaskId, TaskStatus};

use crate::{StoreError, rows::task_id};

/// The agent's unfinished tasks with the same call key submitted since `?`, oldest first; binds
/// `agent_id`, `call_key`, `created_at` bound.
pub(crate) static ACTIVE_TWINS: LazyLock<String> = LazyLock::new(|| {
    // Status names are fixed identifiers, so they are written into the statement.
    let unfinished: Vec<String> = TaskStatus::ALL
        .iter()
        .filter(|s| !s.is_terminal())
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    format!(
        "SELECT id FROM tasks WHERE agent_id = ? AND call_key = ? AND created_at >= ? \
         AND status IN ({}) ORDER BY created_at, queue_seq",
        unfinished.join(", ")
    )
});

// The `call_history` table exists in both dialects (SQLite's migration 0011 creates it too, so
// the SQL and its conformance case are shared), but only a store shared by several instances
// writes it: a lone instance keeps its loop guard's history in memory.

/// Forgets every caller's calls made before `?`.
pub(crate) const CALLS_FORGET: &str = "DELETE FROM call_history WHERE at < ?";

/// Records a call: binds `caller`, `at`, `key`.
pub(crate) const CALLS_RECORD: &str = "INSERT INTO call_history (caller, at, key) VALUES (?, ?, ?)";

/// A caller's latest calls, newest first: binds `caller` and how many.
pub(crate) const CALLS_LATEST: &str = "SELECT seq, key FROM call_history WHERE caller = ? \
     ORDER BY seq DESC LIMIT CAST(? AS INTEGER)";

/// Forgets a caller's calls before the oldest one kept: binds `caller`, that call's `seq`.
pub(crate) const CALLS_TRIM: &str = "DELETE FROM call_history WHERE caller = ? AND seq < ?";

/// [`CALLS_LATEST`]'s rows (newest first) as the caller's calls oldest first, with the `seq`
/// of the oldest, before which [`CALLS_TRIM`] forgets.
pub(crate) fn oldest_first(mut latest: Vec<(i64, String)>) -> (Option<i64>, Vec<String>) {
    latest.reverse();
    let oldest = latest.first().map(|(seq, _)| *seq);
    (oldest, latest.into_iter().map(|(_, key)| key).collect())
}

/// The twins that refuse a submission when `twins` (the [`ACTIVE_TWINS`] found) reach the
/// guard's limit with it; `None` lets it be stored.
pub(crate) fn judge(
    guard: &RepeatGuard,
    twins: &[String],
) -> Result<Option<Vec<TaskId>>, StoreError> {
    if (twins.len() as u64).saturating_add(1) < u64::from(guard.limit) {
        return Ok(None);
    }
    let active = twins
        .iter()
        .map(|id| task_id("tasks", id))
        .collect::<Result<Vec<TaskId>, _>>()?;
    Ok(Some(active))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(limit: u32) -> RepeatGuard {
        RepeatGuard {
            key: "k".into(),
            limit,
            window_ms: 1_000,
        }
    }

    #[test]
    fn only_unfinished_statuses_count() {
        assert!(ACTIVE_TWINS.contains("'queued', 'running', 'paused', 'input_required'"));
        assert!(!ACTIVE_TWINS.contains("completed"));
    }

    #[test]
    fn refused_when_this_submission_reaches_the_limit() {
        let one = vec![TaskId::generate().unwrap().to_string()];
        let two = vec![one[0].clone(), TaskId::generate().unwrap().to_string()];
        assert_eq!(judge(&guard(3), &one).unwrap(), None);
        let Some(active) = judge(&guard(3), &two).unwrap() else {
            panic!("not refused");
        };
        assert_eq!(active.len(), 2);
        assert!(judge(&guard(0), &[]).unwrap().is_some());
    }
}
