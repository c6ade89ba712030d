//! Keeping Letta in step with Handoff's tasks. One writer per task (an async task of this
//! process) owns its block: it creates and attaches it, rewrites it at most once per interval
//! (at once on a status change), writes the final state, then sends the one notification. A
//! sweeper detaches and deletes blocks when their stored times come due and restarts writers
//! for records left unfinished by an earlier process.

mod notify;
mod sweeper;
mod writer;

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use handoff_config::LettaConfig;
use handoff_store::{StoreError, WorkspaceBacklog, WorkspaceStore};
use handoff_task::{
    EventKind, NewEvent, NotifyState, Task, TaskId, TaskStatus, WorkspaceRecord, unix_millis_now,
};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{LettaClient, LettaError, SyncMeter, TaskSource};

/// What the integration owes the agent of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    /// The label of the task's workspace block in the agent's memory.
    pub block_label: String,
    /// One message when the task ends.
    pub notification: bool,
}

/// Events read per block write.
const EVENTS_READ: u32 = 30;

/// What wakes a task's writer.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// New events since the last write.
    events: AtomicBool,
    /// A status change since the last write (written at once).
    status: AtomicBool,
    wake: Notify,
}

impl Slot {
    fn mark(&self, status_changed: bool) {
        if status_changed {
            self.status.store(true, Ordering::SeqCst);
        } else {
            self.events.store(true, Ordering::SeqCst);
        }
        self.wake.notify_one();
    }
}

/// State shared by the writers and the sweeper.
pub(crate) struct Shared {
    pub config: LettaConfig,
    pub client: LettaClient,
    pub store: Arc<dyn WorkspaceStore>,
    pub source: Arc<dyn TaskSource>,
    /// Where block writes and notifications are counted.
    pub meter: Arc<dyn SyncMeter>,
    /// How long finished tasks are kept: the final write and the notification are retried
    /// until then.
    pub task_retention: Duration,
    /// The writers alive, by task.
    slots: Mutex<HashMap<TaskId, Arc<Slot>>>,
    /// Wakes the sweeper early (a detach was scheduled).
    pub sweep: Notify,
    pub stop: CancellationToken,
    tracker: TaskTracker,
}

impl Shared {
    fn slots(&self) -> MutexGuard<'_, HashMap<TaskId, Arc<Slot>>> {
        // A poisoned lock only means a panicking thread held it; the map stays consistent.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the task's writer unless one is running; returns its slot.
    pub fn ensure_writer(self: &Arc<Self>, id: &TaskId) -> Arc<Slot> {
        let mut slots = self.slots();
        if let Some(slot) = slots.get(id) {
            return slot.clone();
        }
        let slot = Arc::new(Slot::default());
        slots.insert(id.clone(), slot.clone());
        drop(slots);
        let shared = self.clone();
        let id = id.clone();
        let writer_slot = slot.clone();
        self.tracker.spawn(async move {
            writer::run(&shared, &id, &writer_slot).await;
            shared.slots().remove(&id);
        });
        slot
    }

    /// Adds a note about Letta to the task's history (`step` names what happened, for readers
    /// of the event's data).
    pub async fn note(&self, task: &TaskId, step: &str, message: String) {
        let event = NewEvent::new(EventKind::Log, message).with_data(json!({ "letta": step }));
        self.source.note(task, event).await;
    }

    /// Whether the final write and the notification of a task that ended at `completed_at`
    /// are past retrying: its retention is over.
    pub fn retention_over(&self, completed_at: Option<i64>) -> bool {
        completed_at
            .is_some_and(|at| unix_millis_now() > at.saturating_add(millis(self.task_retention)))
    }

    /// Stores `record`, stamped as changed now.
    pub async fn save(&self, record: &mut WorkspaceRecord) -> Result<(), StoreError> {
        record.updated_at = unix_millis_now();
        self.store.put_workspace(record).await
    }
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The Letta integration of one Handoff process. Cheap to clone.
#[derive(Clone)]
pub struct WorkspaceSync {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WorkspaceSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceSync")
            .field("api_url", &self.shared.config.api_url)
            .finish_non_exhaustive()
    }
}

impl WorkspaceSync {
    /// Starts the sweeper, which also resumes whatever an earlier process left unfinished;
    /// `meter` counts block writes and notifications.
    pub fn start(
        config: LettaConfig,
        store: Arc<dyn WorkspaceStore>,
        source: Arc<dyn TaskSource>,
        meter: Arc<dyn SyncMeter>,
        task_retention: Duration,
    ) -> Result<Self, LettaError> {
        let stop = CancellationToken::new();
        let client = LettaClient::new(&config)?.stopping_with(stop.clone());
        let shared = Arc::new(Shared {
            config,
            client,
            store,
            source,
            meter,
            task_retention,
            slots: Mutex::new(HashMap::new()),
            sweep: Notify::new(),
            stop,
            tracker: TaskTracker::new(),
        });
        shared.tracker.spawn(sweeper::run(shared.clone()));
        Ok(Self { shared })
    }

    /// The client (health checks, tests).
    pub fn client(&self) -> &LettaClient {
        &self.shared.client
    }

    /// What `task`'s agent is owed under `config`: a workspace block and, unless opted out, one
    /// message when it ends. Only Letta agents (`agent-<uuid>`) are owed anything.
    pub fn owed(config: &LettaConfig, task: &Task) -> Option<Owed> {
        task.agent_id.is_letta_agent().then(|| Owed {
            block_label: WorkspaceRecord::label_for(&task.id),
            notification: config.notify && task.options.notify,
        })
    }

    /// A task starts running: records what Handoff owes its agent (see [`Self::owed`]) and
    /// starts its writer (a task started again after a restart keeps its record).
    pub async fn task_started(&self, task: &Task) -> Result<(), StoreError> {
        let Some(owed) = Self::owed(&self.shared.config, task) else {
            return Ok(());
        };
        if task.status == TaskStatus::Cancelled {
            return Ok(());
        }
        let now = unix_millis_now();
        let notify = if owed.notification {
            NotifyState::Pending
        } else {
            NotifyState::Off
        };
        let record = WorkspaceRecord::new(task.id.clone(), task.agent_id.clone(), notify, now);
        self.shared.store.insert_workspace(&record).await?;
        self.shared.ensure_writer(&task.id).mark(true);
        Ok(())
    }

    /// Something happened to a task: new events, or (`status_changed`) a new state. Cheap;
    /// tasks without a writer (not a Letta agent's, or already finished) are ignored.
    pub fn touch(&self, id: &TaskId, status_changed: bool) {
        let slot = self.shared.slots().get(id).cloned();
        if let Some(slot) = slot {
            slot.mark(status_changed);
        }
    }

    /// The last call waiting for the task's final result ended: a writer holding the
    /// notification back for it decides now.
    pub fn result_wait_ended(&self, id: &TaskId) {
        let slot = self.shared.slots().get(id).cloned();
        if let Some(slot) = slot {
            slot.wake.notify_one();
        }
    }

    /// What the records still owe Letta: block writes, notifications, detaches, deletes.
    pub async fn backlog(&self) -> Result<WorkspaceBacklog, StoreError> {
        self.shared.store.workspace_backlog().await
    }

    /// Stops the writers and the sweeper; what they had not finished is resumed by the next
    /// process from the stored records.
    pub async fn shutdown(&self) {
        self.shared.stop.cancel();
        self.shared.tracker.close();
        if tokio::time::timeout(Duration::from_secs(5), self.shared.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("Letta writers did not stop within 5 s");
        }
    }
}

#[cfg(test)]
mod tests {
    use handoff_task::{AgentId, TaskStatus};

    use super::*;
    use crate::fixtures::snapshot;

    #[test]
    fn only_letta_agents_are_owed_and_the_message_can_be_turned_off() {
        let config = LettaConfig {
            notify: true,
            ..LettaConfig::off()
        };
        let mut task = snapshot(TaskStatus::Running, "fix it", 1).task;
        let owed = WorkspaceSync::owed(&config, &task).unwrap();
        assert_eq!(owed.block_label, format!("handoff_{}", task.id));
        assert!(owed.block_label.starts_with("handoff_task_"));
        assert!(owed.notification);
        task.options.notify = false;
        assert!(!WorkspaceSync::owed(&config, &task).unwrap().notification);
        task.options.notify = true;
        let quiet = LettaConfig {
            notify: false,
            ..config.clone()
        };
        assert!(!WorkspaceSync::owed(&quiet, &task).unwrap().notification);
        task.agent_id = AgentId::parse("my-agent").unwrap();
        assert_eq!(WorkspaceSync::owed(&config, &task), None);
    }
}
