//! Fencing: the leases this store handle (one instance) holds, and the check every write about
//! such a task makes inside its transaction. A claim with a lease records the task's owner and
//! fencing token here; the write then goes through only while the stored row still names the
//! same owner and token. Another instance that took the task over (the rescuer re-queued or
//! failed it, a new claim incremented the token) makes the row differ, and the write is refused
//! with [`StoreError::Fenced`] before it changes anything. Writes about tasks this handle does
//! not hold (submissions, operators' changes to queued tasks) are not fenced.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use handoff_task::{Task, TaskId};

use crate::StoreError;

/// The owner and token a write about a held task must still find in its row.
pub(crate) const FENCE_OF: &str = "SELECT owner, fence FROM tasks WHERE id = ?";

/// The tasks this handle holds a lease on: task id → (owner, fencing token). Clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Held(Arc<Mutex<HashMap<String, (String, i64)>>>);

impl Held {
    /// Remembers a claimed task's lease (no lease: nothing to fence).
    pub(crate) fn hold(&self, task: &Task) {
        if let Some(lease) = &task.lease {
            self.map().insert(
                task.id.as_str().to_owned(),
                (lease.owner.clone(), task.fence),
            );
        }
    }

    /// Forgets a task (its run ended, or it was taken away).
    pub(crate) fn release(&self, id: &TaskId) {
        self.map().remove(id.as_str());
    }

    /// Whether writes about `id` are fenced.
    pub(crate) fn holds(&self, id: &TaskId) -> bool {
        self.map().contains_key(id.as_str())
    }

    /// Checks the stored `(owner, fence)` of a held task against the lease taken; a task that
    /// is gone or changed hands is refused. It stays held, so every later write of this
    /// handle about it is refused too (a lost task is never written to unfenced).
    pub(crate) fn verify(
        &self,
        id: &TaskId,
        stored: Option<(Option<String>, i64)>,
    ) -> Result<(), StoreError> {
        let Some((owner, fence)) = self.map().get(id.as_str()).cloned() else {
            return Ok(());
        };
        match stored {
            Some((Some(now_owner), now_fence)) if now_owner == owner && now_fence == fence => {
                Ok(())
            }
            _ => Err(StoreError::Fenced {
                task: id.as_str().to_owned(),
            }),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, i64)>> {
        // The map is never left half-updated, so a panic elsewhere does not spoil it.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
