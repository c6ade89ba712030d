//! Legacy-era elicitation: when a task created by a session client that declared the
//! elicitation capability waits for an answer, the question goes to that client as an
//! `elicitation/create` request and its answer goes to the executor. If the client cannot be
//! asked (it left, refused, timed out) or answers with something the form does not allow, the
//! request stays pending for `send_task_message` (or the ask timeout's deny), so nothing is
//! lost and nothing malformed is ever read as an allow.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use handoff_protocol::TaskNotice;
use handoff_task::{AgentId, Principal, TaskId, TaskStatus};
use handoff_tools::handles::{HandleState, TaskHandles};
use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::{answer, elicit};

/// A task whose owner's client is asked directly.
struct Followed {
    agent: AgentId,
    peer: Peer<RoleServer>,
    /// Requests already put to the client (each is asked once).
    asked: HashSet<String>,
}

/// Follows tasks of elicitation-capable session clients and asks them for answers.
pub(crate) struct ElicitationRelay {
    handles: TaskHandles,
    /// How long the client gets for one answer (the engine's ask timeout denies after that).
    timeout: Duration,
    followed: Mutex<HashMap<TaskId, Followed>>,
}

impl ElicitationRelay {
    /// Starts following task changes until `shutdown`.
    pub(crate) fn start(
        handles: TaskHandles,
        timeout: Duration,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        let relay = Arc::new(Self {
            handles,
            timeout,
            followed: Mutex::new(HashMap::new()),
        });
        tokio::spawn(relay.clone().run(shutdown));
        relay
    }

    /// Asks `peer` whenever task `id` of `agent` waits for an answer.
    pub(crate) fn follow(self: &Arc<Self>, id: TaskId, agent: AgentId, peer: Peer<RoleServer>) {
        self.lock().insert(
            id.clone(),
            Followed {
                agent,
                peer,
                asked: HashSet::new(),
            },
        );
        // The task may already wait (a fast executor); look once now.
        tokio::spawn(self.clone().ask(id));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, Followed>> {
        self.followed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut changes = self.handles.follow();
        loop {
            let change = tokio::select! {
                () = shutdown.cancelled() => return,
                change = changes.recv() => change,
            };
            match change {
                Ok(TaskNotice::Status(id, status)) if status.is_terminal() => {
                    self.lock().remove(&id);
                }
                Ok(TaskNotice::Status(id, TaskStatus::InputRequired)) => {
                    if self.lock().contains_key(&id) {
                        tokio::spawn(self.clone().ask(id));
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {
                    // Missed changes: look at every followed task once.
                    let ids: Vec<TaskId> = self.lock().keys().cloned().collect();
                    for id in ids {
                        tokio::spawn(self.clone().ask(id));
                    }
                }
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// Puts every pending, not yet asked request of `id` to its client, one at a time.
    async fn ask(self: Arc<Self>, id: TaskId) {
        loop {
            let Some(agent) = self.lock().get(&id).map(|f| f.agent.clone()) else {
                return;
            };
            let owner = Principal::Agent(agent.clone());
            let handle = match self.handles.get(&owner, id.as_str()).await {
                Ok(handle) => handle,
                Err(error) => {
                    tracing::debug!(task = %id, %error, "elicitation relay lost the task");
                    self.lock().remove(&id);
                    return;
                }
            };
            let HandleState::InputRequired { requests } = handle.state else {
                return;
            };
            // Claim the next request under the lock so two lookers never ask twice.
            let next = {
                let mut followed = self.lock();
                let Some(entry) = followed.get_mut(&id) else {
                    return;
                };
                requests
                    .into_iter()
                    .find(|r| !entry.asked.contains(&r.id))
                    .map(|r| {
                        entry.asked.insert(r.id.clone());
                        (r, entry.peer.clone())
                    })
            };
            let Some((request, peer)) = next else {
                return;
            };
            let form = elicit::form(id.as_str(), &request);
            match peer
                .create_elicitation_with_timeout(form, Some(self.timeout))
                .await
            {
                Ok(result) => match answer::parse(request.kind, &result) {
                    Ok(answer) => {
                        if let Err(error) = self
                            .handles
                            .answer(&owner, id.as_str(), &request.id, answer)
                            .await
                        {
                            tracing::warn!(task = %id, %error, "elicited answer not delivered");
                        }
                    }
                    // Never guess at what a malformed answer meant: it answers nothing, and
                    // the request waits for send_task_message or the ask timeout's deny.
                    Err(error) => tracing::warn!(
                        task = %id,
                        request = %request.id,
                        %error,
                        "the client's elicitation result does not fit the form; the request stays pending"
                    ),
                },
                Err(error) => {
                    // The request stays pending: send_task_message (or the ask timeout) ends it.
                    tracing::info!(task = %id, %error, "client could not be asked; the request waits for send_task_message");
                }
            }
        }
    }
}
