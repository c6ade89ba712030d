//! The `execute_task` loop guard's check, shared by both stores: judged inside the insert's
//! write transaction, so identical submissions racing on several instances count each other.

use std::sync::LazyLock;

use handoff_task::{RepeatGuard, TaskId, TaskStatus};

use crate::{InsertOutcome, StoreError, rows::task_id};

/// The agent's unfinished tasks with the same call key submitted since `?`, oldest first; binds
/// `agent_id`, `call_key`, `created_at` bound (written with `?`: the PostgreSQL store numbers
/// the placeholders).
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

/// The refusal when `twins` (the [`ACTIVE_TWINS`] found) reach the guard's limit with this
/// submission; `None` lets it be stored.
pub(crate) fn judge(
    guard: &RepeatGuard,
    twins: &[String],
) -> Result<Option<InsertOutcome>, StoreError> {
    if (twins.len() as u64).saturating_add(1) < u64::from(guard.limit) {
        return Ok(None);
    }
    let active = twins
        .iter()
        .map(|id| task_id("tasks", id))
        .collect::<Result<Vec<TaskId>, _>>()?;
    Ok(Some(InsertOutcome::Repeated { active }))
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
        let Some(InsertOutcome::Repeated { active }) = judge(&guard(3), &two).unwrap() else {
            panic!("not refused");
        };
        assert_eq!(active.len(), 2);
        assert!(judge(&guard(0), &[]).unwrap().is_some());
    }
}
