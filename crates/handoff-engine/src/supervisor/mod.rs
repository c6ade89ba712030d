//! One supervisor per run: an actor that owns everything live about the run — the
//! executor's control handle and capabilities, Handoff's decision to stop it, the requests
//! waiting for an answer and their ask timers. The run's driver (the lifecycle) talks to it
//! through a [`RunLink`] and reads what the supervisor publishes of it ([`live`]); everyone
//! else goes through [`TaskCommands`]. Nothing else touches live run state: this registry holds
//! only mailboxes.

mod actor;
mod commands;
mod guard;
mod lease;
mod link;
mod live;
mod relay;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
};

use async_trait::async_trait;
use handoff_protocol::TaskCommand;
use handoff_runner::Capabilities;
use handoff_task::{PendingInput, Task, TaskId};
use tokio::sync::{mpsc, oneshot, watch};

pub use commands::{CommandReply, TaskCommands};
pub(crate) use link::RunLink;
pub(crate) use relay::parse_approval;

use self::{
    actor::{Msg, Supervisor},
    live::RunState,
};
use crate::{EngineError, finish::StopReason, plan::RunPlan, shared::Shared};

/// Messages a supervisor's mailbox holds before senders wait.
const MAILBOX: usize = 64;

/// The mailboxes of the runs this process supervises.
#[derive(Default)]
pub(crate) struct Supervisors {
    mailboxes: Mutex<HashMap<TaskId, mpsc::Sender<Msg>>>,
}

impl Supervisors {
    /// A poisoned lock only means a panicking thread held it; the map is still consistent
    /// (every update is a single insert or remove).
    fn mailboxes(&self) -> MutexGuard<'_, HashMap<TaskId, mpsc::Sender<Msg>>> {
        self.mailboxes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the supervisor of a claimed (or re-attached) task's run under `plan`; `restored`
    /// are the requests a previous process stored as waiting for an answer. The link returned
    /// is the run driver's only way to its supervisor.
    pub(crate) fn spawn(
        &self,
        state: &Arc<Shared>,
        task: &Task,
        plan: Arc<RunPlan>,
        capabilities: Capabilities,
        restored: Vec<PendingInput>,
    ) -> RunLink {
        let (tx, rx) = mpsc::channel(MAILBOX);
        let (live, read) = watch::channel(RunState::default());
        self.mailboxes().insert(task.id.clone(), tx.clone());
        let supervisor = Supervisor::new(
            state.clone(),
            task.clone(),
            plan,
            capabilities,
            restored,
            live,
        );
        tokio::spawn(supervisor.run(rx));
        RunLink::new(task.id.clone(), tx, read)
    }

    /// Whether this process supervises a run of task `id`.
    pub(crate) fn supervises(&self, id: &TaskId) -> bool {
        self.mailboxes().contains_key(id)
    }

    /// Forgets task `id`'s mailbox if it is still `tx` (a later run of the task keeps its own).
    fn remove(&self, id: &TaskId, tx: &mpsc::Sender<Msg>) {
        let mut mailboxes = self.mailboxes();
        if mailboxes
            .get(id)
            .is_some_and(|known| known.same_channel(tx))
        {
            mailboxes.remove(id);
        }
    }

    /// The tasks whose runs this process supervises.
    pub(crate) fn ids(&self) -> Vec<TaskId> {
        self.mailboxes().keys().cloned().collect()
    }

    /// Tells task `id`'s supervisor what became of its lease.
    pub(crate) async fn lease(&self, id: &TaskId, notice: crate::lease_clock::LeaseNotice) {
        let tx = self.mailboxes().get(id).cloned();
        if let Some(tx) = tx {
            let _ = tx.send(Msg::Lease(notice)).await;
        }
    }

    /// Tells every supervisor to kill its run at once, without grace (the server must stop now).
    pub(crate) async fn stop_all_now(&self) {
        let all: Vec<_> = self.mailboxes().values().cloned().collect();
        for tx in all {
            let _ = tx.send(Msg::StopNow).await;
        }
    }

    /// Tells every supervisor to stop its run because the server shuts down.
    pub(crate) async fn stop_all(&self, reason: StopReason) {
        let all: Vec<_> = self.mailboxes().values().cloned().collect();
        for tx in all {
            let _ = tx.send(Msg::Stop(reason.clone())).await;
        }
    }
}

#[async_trait]
impl TaskCommands for Supervisors {
    async fn send(
        &self,
        id: &TaskId,
        command: TaskCommand,
    ) -> Result<Option<CommandReply>, EngineError> {
        let Some(tx) = self.mailboxes().get(id).cloned() else {
            return Ok(None);
        };
        let (reply, answer) = oneshot::channel();
        if tx.send(Msg::Command(command, reply)).await.is_err() {
            return Ok(None);
        }
        // A supervisor that ended before answering owns no run any more.
        answer.await.map_or(Ok(None), |reply| reply.map(Some))
    }
}
