//! The open result waits (`execute_task {sync: true}` callers still in their call), counted
//! per task. The shared handles hold the count; the wait itself, which ends it, is
//! `result_wait`'s [`ResultWait`](crate::ResultWait). A leaf: it imports nothing of the engine.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

use handoff_task::TaskId;

/// The open waits, by task (a task may have several: idempotent resubmissions).
#[derive(Debug, Default)]
pub(crate) struct ResultWaits(Mutex<HashMap<TaskId, usize>>);

impl ResultWaits {
    fn lock(&self) -> MutexGuard<'_, HashMap<TaskId, usize>> {
        // Counts only; a panic elsewhere leaves them usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens one more wait for `task`.
    pub(crate) fn open(&self, task: &TaskId) {
        *self.lock().entry(task.clone()).or_default() += 1;
    }

    /// Ends one wait; true when it was the task's last.
    pub(crate) fn close(&self, task: &TaskId) -> bool {
        let mut open = self.lock();
        match open.get_mut(task) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                open.remove(task);
                true
            }
            None => false,
        }
    }

    /// Whether a caller still waits for the task's result.
    pub(crate) fn is_open(&self, task: &TaskId) -> bool {
        self.lock().contains_key(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_stays_awaited_until_its_last_wait_closes() {
        let waits = ResultWaits::default();
        let id = TaskId::generate().unwrap();
        assert!(!waits.is_open(&id));
        waits.open(&id);
        waits.open(&id);
        assert!(!waits.close(&id));
        assert!(waits.is_open(&id));
        assert!(waits.close(&id));
        assert!(!waits.is_open(&id));
        assert!(!waits.close(&id), "closing again changes nothing");
    }
}
