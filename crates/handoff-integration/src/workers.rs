//! Following the engine's notices: one worker (an async task of this process) per task that
//! has something to keep in step, woken through its [`Slot`] when the task changes, and the
//! integration's other long-lived tasks beside them; all stop together.

use std::{
    collections::HashMap,
    future::Future,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use handoff_task::TaskId;
use tokio::sync::Notify;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

/// How long a shutdown waits for the workers to stop.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// What wakes a task's worker.
#[derive(Debug, Default)]
pub struct Slot {
    /// New events since the worker last looked.
    events: AtomicBool,
    /// A status change since the worker last looked (acted on at once).
    status: AtomicBool,
    wake: Notify,
}

impl Slot {
    /// Something happened to the task: new events, or (`status_changed`) a new state.
    pub fn mark(&self, status_changed: bool) {
        if status_changed {
            self.status.store(true, Ordering::SeqCst);
        } else {
            self.events.store(true, Ordering::SeqCst);
        }
        self.wake.notify_one();
    }

    /// Wakes the worker with no news (something it waits on besides the task changed).
    pub fn nudge(&self) {
        self.wake.notify_one();
    }

    /// Whether the state changed since the last take, clearing the mark.
    pub fn take_status(&self) -> bool {
        self.status.swap(false, Ordering::SeqCst)
    }

    /// Whether events arrived since the last take, clearing the mark.
    pub fn take_events(&self) -> bool {
        self.events.swap(false, Ordering::SeqCst)
    }

    /// Whether a state change waits to be taken.
    pub fn status_marked(&self) -> bool {
        self.status.load(Ordering::SeqCst)
    }

    /// Whether new events wait to be taken.
    pub fn events_marked(&self) -> bool {
        self.events.load(Ordering::SeqCst)
    }

    /// Resolves at the next mark or nudge; one that came while nobody waited counts.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }
}

/// One integration's workers by task, and its other long-lived tasks.
#[derive(Debug)]
pub struct Workers {
    slots: Arc<Mutex<HashMap<TaskId, Arc<Slot>>>>,
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl Workers {
    /// No workers yet; they stop once `stop` is cancelled.
    pub fn new(stop: CancellationToken) -> Self {
        Self {
            slots: Arc::default(),
            tracker: TaskTracker::new(),
            stop,
        }
    }

    /// The slot of `id`'s worker, while one runs.
    pub fn slot(&self, id: &TaskId) -> Option<Arc<Slot>> {
        lock(&self.slots).get(id).cloned()
    }

    /// Whether a worker runs for `id`.
    pub fn serves(&self, id: &TaskId) -> bool {
        lock(&self.slots).contains_key(id)
    }

    /// Starts `id`'s worker unless one runs, and returns its slot: `work` gets the slot, and
    /// the slot goes when the work ends (a later notice starts a new worker).
    pub fn ensure<F, W>(&self, id: &TaskId, work: W) -> Arc<Slot>
    where
        W: FnOnce(Arc<Slot>) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(id) {
            return slot.clone();
        }
        let slot = Arc::new(Slot::default());
        slots.insert(id.clone(), slot.clone());
        drop(slots);
        let work = work(slot.clone());
        let (slots, id) = (self.slots.clone(), id.clone());
        self.tracker.spawn(async move {
            work.await;
            lock(&slots).remove(&id);
        });
        slot
    }

    /// Runs `task` beside the workers (a sweeper, a sync loop); a shutdown waits for it too.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(task);
    }

    /// Stops everything and waits up to 5 s for it; `what` names the workers in the warning
    /// when they take longer. What they had not finished is the next process's to resume.
    pub async fn shutdown(&self, what: &str) {
        self.stop.cancel();
        self.tracker.close();
        if tokio::time::timeout(STOP_WAIT, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("{what} did not stop within 5 s");
        }
    }
}

fn lock(slots: &Mutex<HashMap<TaskId, Arc<Slot>>>) -> MutexGuard<'_, HashMap<TaskId, Arc<Slot>>> {
    // A poisoned lock only means a panicking thread held it; the map stays consistent.
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_taken_once() {
        let slot = Slot::default();
        slot.mark(false);
        assert!(slot.events_marked() && !slot.status_marked());
        assert!(slot.take_events());
        assert!(!slot.take_events());
        slot.mark(true);
        assert!(slot.take_status());
        assert!(!slot.status_marked());
    }

    #[tokio::test]
    async fn one_worker_per_task_whose_slot_goes_with_it() {
        let workers = Workers::new(CancellationToken::new());
        let id = TaskId::generate().unwrap();
        let (done, ended) = tokio::sync::oneshot::channel::<()>();
        let first = workers.ensure(&id, |slot| async move {
            slot.woken().await;
            let _ = done.send(());
        });
        let mut started_again = false;
        let again = workers.ensure(&id, |_| {
            started_again = true;
            async {}
        });
        assert!(Arc::ptr_eq(&first, &again) && !started_again);
        assert!(workers.serves(&id));
        workers.slot(&id).unwrap().mark(false);
        ended.await.unwrap();
        workers.shutdown("test workers").await;
        assert!(!workers.serves(&id));
    }

    #[tokio::test]
    async fn a_shutdown_stops_what_runs_beside_the_workers() {
        let stop = CancellationToken::new();
        let workers = Workers::new(stop.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        workers.spawn(async move {
            stop.cancelled().await;
            let _ = tx.send(());
        });
        workers.shutdown("test workers").await;
        rx.await.unwrap();
    }
}
