//! One way out for everything that happens to a task: every appended event and every state
//! change is published here once, to in-process subscribers (sync waiters, the MCP Tasks
//! extension, the elicitation relay — a broadcast that may lag, so they re-read the store),
//! to the integrations the composition root plugged in (called for every notice, never
//! dropped) and, on a shared store, to the other instances (`peers`), whose notices reach
//! this process's subscribers the same way. A notice is the protocol's [`TaskNotice`], the
//! same value here and on the wire between instances.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use handoff_protocol::TaskNotice;
use handoff_task::{Task, TaskId, TaskStatus};
use tokio::sync::{broadcast, mpsc};

/// Notices kept for slow subscribers before they lag (and must re-read the store).
const BACKLOG: usize = 1024;

/// Notices about one task, in order; built on the all-tasks broadcast.
pub struct TaskSubscription {
    task: TaskId,
    notices: broadcast::Receiver<TaskNotice>,
}

/// Why a subscription yielded no notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// The subscriber fell behind and notices were dropped: re-read the task from the store.
    Lagged,
    /// The engine is gone.
    Closed,
}

impl TaskSubscription {
    /// The next notice about the task.
    pub async fn next(&mut self) -> Result<TaskNotice, Missed> {
        loop {
            match self.notices.recv().await {
                Ok(notice) if notice.task() == &self.task => return Ok(notice),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => return Err(Missed::Lagged),
                Err(broadcast::error::RecvError::Closed) => return Err(Missed::Closed),
            }
        }
    }
}

/// A plug-in that follows every task (Letta, Matrix…), built by the composition root.
#[async_trait]
pub trait Integration: Send + Sync + 'static {
    /// A claimed task starts running, before anything else happens to it: record what its
    /// agent is owed.
    async fn task_started(&self, task: &Task);

    /// The task has new events. Must be cheap: it runs on the writer's path.
    fn events_appended(&self, task: &TaskId);

    /// The task moved to `status`. Must be cheap.
    fn status_changed(&self, task: &TaskId, status: TaskStatus);

    /// The last caller waiting in its submitting call for the task's final result stopped
    /// waiting; whether it got the result is in the store (`result_delivered_at`). Must be
    /// cheap.
    fn result_wait_ended(&self, _task: &TaskId) {}

    /// The engine stopped its runs; finish or hand over what is in flight.
    async fn shutdown(&self);
}

/// The engine's outbox.
pub(crate) struct Outbox {
    notices: broadcast::Sender<TaskNotice>,
    /// Set once, when the engine starts.
    integrations: OnceLock<Vec<Arc<dyn Integration>>>,
    /// Where this process's own notices are copied for the other instances (shared store).
    forward: OnceLock<mpsc::Sender<TaskNotice>>,
}

impl Outbox {
    /// An outbox with no subscribers yet.
    pub(crate) fn new() -> Self {
        Self {
            notices: broadcast::channel(BACKLOG).0,
            integrations: OnceLock::new(),
            forward: OnceLock::new(),
        }
    }

    /// Plugs in the integrations (once; later calls are ignored).
    pub(crate) fn plug(&self, integrations: Vec<Arc<dyn Integration>>) {
        let _ = self.integrations.set(integrations);
    }

    /// Copies this process's notices to `tx` from now on (once; later calls are ignored).
    pub(crate) fn forward_to(&self, tx: mpsc::Sender<TaskNotice>) {
        let _ = self.forward.set(tx);
    }

    /// Publishes a notice another instance sent, to this process's subscribers only (the
    /// integrations follow the tasks this instance holds).
    pub(crate) fn relayed(&self, notice: TaskNotice) {
        let _ = self.notices.send(notice);
    }

    /// Sends a notice to subscribers and, on a shared store, to the other instances (never
    /// waiting: when that queue is full the others re-read instead).
    fn publish(&self, notice: TaskNotice) {
        if let Some(forward) = self.forward.get() {
            let _ = forward.try_send(notice.clone());
        }
        let _ = self.notices.send(notice);
    }

    fn integrations(&self) -> &[Arc<dyn Integration>] {
        self.integrations.get().map_or(&[], Vec::as_slice)
    }

    /// Every notice from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<TaskNotice> {
        self.notices.subscribe()
    }

    /// Every notice about `task` from now on.
    pub(crate) fn subscribe_task(&self, task: &TaskId) -> TaskSubscription {
        TaskSubscription {
            task: task.clone(),
            notices: self.notices.subscribe(),
        }
    }

    /// Publishes new events of `task`.
    pub(crate) fn events(&self, task: &TaskId) {
        for integration in self.integrations() {
            integration.events_appended(task);
        }
        self.publish(TaskNotice::Events(task.clone()));
    }

    /// Publishes a state change.
    pub(crate) fn status(&self, task: &TaskId, status: TaskStatus) {
        for integration in self.integrations() {
            integration.status_changed(task, status);
        }
        self.publish(TaskNotice::Status(task.clone(), status));
    }

    /// Tells the integrations nobody waits in a call for the task's result any more.
    pub(crate) fn result_wait_ended(&self, task: &TaskId) {
        for integration in self.integrations() {
            integration.result_wait_ended(task);
        }
    }

    /// Tells the integrations a task starts running.
    pub(crate) async fn started(&self, task: &Task) {
        for integration in self.integrations() {
            integration.task_started(task).await;
        }
    }

    /// Tells the integrations the engine stopped.
    pub(crate) async fn shutdown(&self) {
        for integration in self.integrations() {
            integration.shutdown().await;
        }
    }
}
