//! Keeping Letta in step with Handoff's tasks. One writer per task (an async task of this
//! process) owns its block: it creates and attaches it, rewrites it at most once per interval
//! (at once on a status change), writes the final state, then sends the one notification. A
//! sweeper detaches and deletes blocks when their stored times come due and restarts writers
//! for records left unfinished by an earlier process.

mod notify;
mod sweeper;
mod writer;

use std::{sync::Arc, time::Duration};

use handoff_config::LettaConfig;
use handoff_integration::{Slot, TaskSource, Workers, step_note};
use handoff_store::{StoreError, WorkspaceBacklog, WorkspaceStore};
use handoff_task::{NotifyState, Task, TaskId, TaskStatus, WorkspaceRecord, unix_millis_now};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::{LettaClient, LettaError, SyncMeter};

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
    /// Wakes the sweeper early (a detach was scheduled).
    pub sweep: Notify,
    /// Cancelled when the integration stops (the writers', the sweeper's and the client's).
    pub stop: CancellationToken,
    /// The writers alive, by task, and the sweeper.
    workers: Workers,
}

impl Shared {
    /// Starts the task's writer unless one is running; returns its slot.
    pub fn ensure_writer(self: &Arc<Self>, id: &TaskId) -> Arc<Slot> {
        let (shared, task) = (self.clone(), id.clone());
        self.workers.ensure(id, |slot| async move {
            writer::run(&shared, &task, &slot).await;
        })
    }

    /// Adds a note about Letta to the task's history (`step` names what happened, for readers
    /// of the event's data).
    pub async fn note(&self, task: &TaskId, step: &str, message: String) {
        self.source
            .note(task, step_note("letta", step, message))
            .await;
    }

    /// Whether the final write and the notification of a task that ended at `completed_at`
    /// are past retrying: its retention is over.
    pub fn retention_over(&self, completed_at: Option<i64>) -> bool {
        completed_at
            .is_some_and(|at| unix_millis_now() > at.saturating_add(millis(self.task_retention)))
    }

    /// Stores `record`, stamped as changed now.
    pub async fn save(&self, record: &mut WorkspaceRecord) -> Result<(), StoreError> {
        // A follow-up round may have started the record over since this holder (a writer
        // still notifying, the sweeper detaching) read it: what it did belongs to the round
        // before and must not undo the new round's start.
        if record.round_done()
            && let Some(stored) = self.store.workspace(&record.task_id).await?
            && stored.updated_at > record.updated_at
            && !stored.round_done()
        {
            tracing::debug!(task = %record.task_id, "Letta record started over by a new round; not saved");
            return Ok(());
        }
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
            sweep: Notify::new(),
            workers: Workers::new(stop.clone()),
            stop,
        });
        shared.workers.spawn(sweeper::run(shared.clone()));
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
        let mut stored = self.shared.store.insert_workspace(&record).await?;
        // A follow-up round of a task whose block and notification were done: the block is
        // kept current again and the round's end is owed its own message.
        if task.options.round > 1 && stored.round_done() {
            stored.next_round(notify, now);
            self.shared.store.put_workspace(&stored).await?;
        }
        self.shared.ensure_writer(&task.id).mark(true);
        Ok(())
    }

    /// Something happened to a task: new events, or (`status_changed`) a new state. Cheap;
    /// tasks without a writer (not a Letta agent's, or already finished) are ignored.
    pub fn touch(&self, id: &TaskId, status_changed: bool) {
        if let Some(slot) = self.shared.workers.slot(id) {
            slot.mark(status_changed);
        }
    }

    /// The last call waiting for the task's final result ended: a writer holding the
    /// notification back for it decides now.
    pub fn result_wait_ended(&self, id: &TaskId) {
        if let Some(slot) = self.shared.workers.slot(id) {
            slot.nudge();
        }
    }

    /// What the records still owe Letta: block writes, notifications, detaches, deletes.
    pub async fn backlog(&self) -> Result<WorkspaceBacklog, StoreError> {
        self.shared.store.workspace_backlog().await
    }

    /// Stops the writers and the sweeper; what they had not finished is resumed by the next
    /// process from the stored records.
    pub async fn shutdown(&self) {
        self.shared.workers.shutdown("Letta writers").await;
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
