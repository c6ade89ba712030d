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

    /// Marks `id`'s worker (`status_changed` as [`Slot::mark`]), starting one when none runs,
    /// under the lock its end is decided under: a worker whose work ended with a state change
    /// not taken (it came after the work's last look) runs `work` again, so no change falls
    /// between a worker's last look and its end.
    pub fn ensure_marked<F, W>(&self, id: &TaskId, status_changed: bool, work: W)
    where
        W: Fn(Arc<Slot>) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(id) {
            slot.mark(status_changed);
            return;
        }
        let slot = Arc::new(Slot::default());
        slot.mark(status_changed);
        slots.insert(id.clone(), slot.clone());
        drop(slots);
        let (slots, id, stop) = (self.slots.clone(), id.clone(), self.stop.clone());
        self.tracker.spawn(async move {
            loop {
                work(slot.clone()).await;
                let again = {
                    let mut held = lock(&slots);
                    // Taken, not only read: work that ends without looking at the mark (it had
                    // nothing to do) would otherwise be run again and again for the same change.
                    let again = slot.take_status() && !stop.is_cancelled();
                    if !again {
                        held.remove(&id);
                    }
                    again
                };
                if !again {
                    return;
                }
            }
        });
    }

    /// Marks `id`'s worker under the same lock as [`Workers::ensure_marked`]; `false` when
    /// none runs.
    pub fn mark(&self, id: &TaskId, status_changed: bool) -> bool {
        match lock(&self.slots).get(id) {
            Some(slot) => {
                slot.mark(status_changed);
                true
            }
            None => false,
        }
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

    #[tokio::test]
    async fn work_that_leaves_the_mark_untaken_runs_once_more_for_it_not_forever() {
        let workers = Arc::new(Workers::new(CancellationToken::new()));
        let id = TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap();
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let work = {
            let runs = runs.clone();
            move |_slot: Arc<Slot>| {
                let (runs, ended_tx) = (runs.clone(), ended_tx.clone());
                // Ends at once without taking the mark (a poster with nothing left to post).
                async move {
                    let _ = ended_tx.send(runs.fetch_add(1, Ordering::SeqCst) + 1);
                }
            }
        };
        workers.ensure_marked(&id, true, work);
        assert_eq!(ended.recv().await, Some(1));
        assert_eq!(
            ended.recv().await,
            Some(2),
            "once more for the mark it left"
        );
        workers.shutdown("test workers").await;
        assert_eq!(runs.load(Ordering::SeqCst), 2, "and not again");
        assert!(!workers.serves(&id));
    }

    #[tokio::test]
    async fn a_state_change_after_the_workers_last_look_runs_it_again() {
        let workers = Arc::new(Workers::new(CancellationToken::new()));
        let id = TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap();
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (looked_tx, mut looked) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let release = Arc::new(Notify::new());
        let work = {
            let (runs, release) = (runs.clone(), release.clone());
            move |slot: Arc<Slot>| {
                let (runs, release, looked_tx) = (runs.clone(), release.clone(), looked_tx.clone());
                async move {
                    slot.take_status();
                    let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
                    let _ = looked_tx.send(run);
                    // The first run ends only once the next change has come.
                    if run == 1 {
                        release.notified().await;
                    }
                }
            }
        };
        workers.ensure_marked(&id, true, work.clone());
        assert_eq!(looked.recv().await, Some(1));
        // The change comes after the worker's last look, before it ends.
        assert!(workers.mark(&id, true));
        release.notify_one();
        assert_eq!(looked.recv().await, Some(2), "run again for the change");
        workers.shutdown("test workers").await;
        assert!(!workers.serves(&id), "ended once nothing was left to take");
        assert!(!workers.mark(&id, true));
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }
}
