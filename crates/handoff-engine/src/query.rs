use handoff_store::TaskFilter;
use handoff_task::{Artifact, EventKind, Principal, Task, TaskEvent, TaskId, TaskStatus};

use crate::{Engine, EngineError};

/// Events shown by a status call.
const RECENT_EVENTS: u32 = 5;

/// Events searched for the evaluator's last word.
pub(crate) const CONCLUSION_EVENTS: u32 = 20;
/// Events a finished task's status carries: its closing text and output tail sit among them.
pub const CLOSING_EVENTS: u32 = 30;

/// The completion evaluator's conclusion (or its latest progress) among `events`.
pub(crate) fn evaluator_conclusion(events: &[TaskEvent]) -> Option<serde_json::Value> {
    events
        .iter()
        .rev()
        .find(|e| {
            e.kind == handoff_task::EventKind::Verdict
                && e.data.get("by").and_then(serde_json::Value::as_str) == Some("evaluator")
        })
        .map(|e| match e.data.get("completion") {
            Some(outcome) => outcome.clone(),
            None => serde_json::json!({
                "status": "evaluating",
                "reason": e.message,
                "remaining": e.data.get("remaining"),
                "cycles": e.data.get("cycle"),
            }),
        })
}

/// What `get_task_status` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusView {
    /// The task.
    pub task: Task,
    /// Its last few events, oldest first.
    pub recent_events: Vec<TaskEvent>,
    /// Position in the queue, while queued.
    pub queue_position: Option<u64>,
    /// Requests of the executor waiting for the owner's answer, oldest first.
    pub pending_input: Vec<handoff_runner::InputRequest>,
    /// The completion evaluator's conclusion (or its latest progress), when it ran.
    pub completion: Option<serde_json::Value>,
    /// Its newest tool call while it is not finished: what the agent is doing now.
    pub last_tool_call: Option<TaskEvent>,
    /// When it is finished, its last [`CLOSING_EVENTS`] events, oldest first (how it ended);
    /// empty otherwise.
    pub closing_events: Vec<TaskEvent>,
}

/// A page of a task's history.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// The task.
    pub task: Task,
    /// The requested events, in order.
    pub events: Vec<TaskEvent>,
    /// Events recorded in total.
    pub total_events: u64,
    /// Stored artifacts (when asked for).
    pub artifacts: Vec<Artifact>,
}

/// Everything an observer shows of one task at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    /// The task.
    pub task: Task,
    /// Its latest events, oldest first.
    pub recent_events: Vec<TaskEvent>,
    /// Events recorded in all.
    pub total_events: u64,
    /// Its stored outputs.
    pub artifacts: Vec<Artifact>,
    /// Requests of the executor waiting for an answer, oldest first.
    pub pending_input: Vec<handoff_runner::InputRequest>,
    /// The completion evaluator's conclusion (or its latest progress), when it ran.
    pub completion: Option<serde_json::Value>,
}

impl Engine {
    /// The task, if `caller` may read it (tasks it may not read look nonexistent).
    pub async fn readable(&self, caller: &Principal, id: &TaskId) -> Result<Task, EngineError> {
        match self.inner.store.get_task(id).await? {
            Some(task) if caller.can_read(&task) => Ok(task),
            _ => Err(EngineError::NotFound(id.to_string())),
        }
    }

    /// The task, if `caller` may steer it; a task it may only read is refused as such.
    pub async fn steerable(&self, caller: &Principal, id: &TaskId) -> Result<Task, EngineError> {
        let task = self.readable(caller, id).await?;
        if !caller.can_steer(&task) {
            return Err(EngineError::Forbidden(format!(
                "{caller} observes task {id} but may not steer it"
            )));
        }
        Ok(task)
    }

    /// The task with its latest `events` events, its outputs and open requests, as one look.
    pub async fn overview(
        &self,
        caller: &Principal,
        id: &TaskId,
        events: u32,
    ) -> Result<Overview, EngineError> {
        let task = self.readable(caller, id).await?;
        let store = &self.inner.store;
        let mut recent_events = store
            .recent_events(id, events.max(CONCLUSION_EVENTS))
            .await?;
        let completion = evaluator_conclusion(&recent_events);
        let shown = recent_events.len().saturating_sub(events as usize);
        recent_events.drain(..shown);
        Ok(Overview {
            total_events: store.events(id, 0, 0).await?.1,
            artifacts: store.artifacts(id).await?,
            pending_input: self.pending_input(id).await?,
            task,
            recent_events,
            completion,
        })
    }

    /// Adds `caller`'s note to the task's history (an integration saying what it did).
    pub async fn note(
        &self,
        caller: &Principal,
        id: &TaskId,
        event: handoff_task::NewEvent,
    ) -> Result<i64, EngineError> {
        self.steerable(caller, id).await?;
        self.inner.record(id, event).await
    }

    /// Status, recent events and queue position (for the owner and the task's observers).
    pub async fn status(&self, caller: &Principal, id: &TaskId) -> Result<StatusView, EngineError> {
        let task = self.readable(caller, id).await?;
        let finished = task.status.is_terminal();
        // One read serves all: the evaluator's last word is among the task's last few events,
        // and a finished task's closing text among a few more.
        let window = if finished {
            CLOSING_EVENTS.max(CONCLUSION_EVENTS)
        } else {
            CONCLUSION_EVENTS
        };
        let mut events = self.inner.store.recent_events(id, window).await?;
        let last = |n: u32| &events[events.len().saturating_sub(n as usize)..];
        let completion = evaluator_conclusion(last(CONCLUSION_EVENTS));
        let queue_position = if task.status == TaskStatus::Queued {
            self.inner.store.queue_position(id).await?
        } else {
            None
        };
        // The store drops a task's requests in the same write that finishes it.
        let pending_input = if finished {
            Vec::new()
        } else {
            self.pending_input(id).await?
        };
        // The window holds the newest events, so a call in it is the newest; read on its own
        // only when a command's output pushed every call out of it.
        let in_window = events.iter().rev().find(|e| e.kind == EventKind::Tool);
        let last_tool_call = match (finished, in_window) {
            (true, _) => None,
            (false, Some(call)) => Some(call.clone()),
            (false, None) => {
                self.inner
                    .store
                    .last_event_of_kind(id, EventKind::Tool)
                    .await?
            }
        };
        // A finished task keeps the whole window for its closing text; else the last few move.
        let recent = events.len().saturating_sub(RECENT_EVENTS as usize);
        let (recent_events, closing_events) = if finished {
            (events[recent..].to_vec(), events)
        } else {
            (events.split_off(recent), Vec::new())
        };
        Ok(StatusView {
            last_tool_call,
            completion,
            pending_input,
            task,
            recent_events,
            queue_position,
            closing_events,
        })
    }

    /// The requests the task's executor waits on, as stored, oldest first.
    async fn pending_input(
        &self,
        id: &TaskId,
    ) -> Result<Vec<handoff_runner::InputRequest>, EngineError> {
        let stored = self.inner.store.input_requests(id).await?;
        stored
            .into_iter()
            .map(|p| {
                serde_json::from_value(p.request).map_err(|e| {
                    EngineError::Internal(format!("stored request {}: {e}", p.request_id))
                })
            })
            .collect()
    }

    /// The task's last `n` events, oldest first.
    pub async fn recent_events(
        &self,
        caller: &Principal,
        id: &TaskId,
        n: u32,
    ) -> Result<Vec<TaskEvent>, EngineError> {
        self.readable(caller, id).await?;
        Ok(self.inner.store.recent_events(id, n).await?)
    }

    /// The task's newest tool call, however much output followed it.
    pub async fn last_tool_call(
        &self,
        caller: &Principal,
        id: &TaskId,
    ) -> Result<Option<TaskEvent>, EngineError> {
        self.readable(caller, id).await?;
        Ok(self
            .inner
            .store
            .last_event_of_kind(id, EventKind::Tool)
            .await?)
    }

    /// A page of events (and optionally the artifacts).
    pub async fn history(
        &self,
        caller: &Principal,
        id: &TaskId,
        offset: u64,
        limit: u32,
        include_artifacts: bool,
    ) -> Result<History, EngineError> {
        let task = self.readable(caller, id).await?;
        let (events, total_events) = self.inner.store.events(id, offset, limit).await?;
        let artifacts = if include_artifacts {
            self.inner.store.artifacts(id).await?
        } else {
            Vec::new()
        };
        Ok(History {
            task,
            events,
            total_events,
            artifacts,
        })
    }

    /// The caller's tasks (an operator's: every agent's), newest first.
    pub async fn list(
        &self,
        caller: &Principal,
        statuses: Vec<TaskStatus>,
        limit: u32,
        before_seq: Option<i64>,
    ) -> Result<handoff_store::TaskPage, EngineError> {
        self.list_matching(caller, statuses, limit, before_seq, None)
            .await
    }

    /// [`Engine::list`], only the tasks whose description contains `text` (in any case) when
    /// it is given.
    pub async fn list_matching(
        &self,
        caller: &Principal,
        statuses: Vec<TaskStatus>,
        limit: u32,
        before_seq: Option<i64>,
        text: Option<String>,
    ) -> Result<handoff_store::TaskPage, EngineError> {
        let filter = TaskFilter {
            agent_id: match caller {
                Principal::Agent(agent) => Some(agent.clone()),
                Principal::Operator(_) => None,
            },
            statuses,
            limit,
            before_seq,
            text,
        };
        Ok(self.inner.store.list_tasks(&filter).await?)
    }

    /// Lists a task's working directory.
    pub async fn files(
        &self,
        caller: &Principal,
        id: &TaskId,
        path: Option<&str>,
    ) -> Result<crate::FileListing, EngineError> {
        let task = self.readable(caller, id).await?;
        match self.inner.files_at(&task).await? {
            crate::peers::FilesAt::On(holder) => self.inner.list_files_on(&holder, id, path).await,
            crate::peers::FilesAt::Here => {
                crate::files::list(std::path::Path::new(&task.workdir), path).await
            }
        }
    }

    /// Reads part of a file in a task's working directory.
    pub async fn read_file(
        &self,
        caller: &Principal,
        id: &TaskId,
        path: &str,
        offset: u64,
        max_bytes: Option<u64>,
    ) -> Result<crate::FileChunk, EngineError> {
        let task = self.readable(caller, id).await?;
        let max = max_bytes.unwrap_or(crate::files::DEFAULT_READ_BYTES);
        match self.inner.files_at(&task).await? {
            crate::peers::FilesAt::On(holder) => {
                self.inner
                    .read_file_on(&holder, id, path, offset, max)
                    .await
            }
            crate::peers::FilesAt::Here => {
                crate::files::read(std::path::Path::new(&task.workdir), path, offset, max).await
            }
        }
    }
}
