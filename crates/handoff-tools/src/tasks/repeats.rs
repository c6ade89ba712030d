//! The loop guard's rule for `execute_task`. Handing over the same work again once it has
//! finished is not a loop, so only identical submissions whose tasks are still queued, running,
//! paused or waiting for input count. The pipeline's guard judges a call before it runs and
//! cannot ask the engine, so submissions are judged here, where the engine says which tasks
//! are still active.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use handoff_engine::{Engine, EngineError, Submitted};
use handoff_policy::loop_guard::{Ladder, call_key};
use handoff_protocol::{names::EXECUTE_TASK as TOOL, tasks::ExecuteTaskArgs};
use handoff_task::TaskId;

use super::failure::tool_error;
use crate::{AgentId, ToolError};

/// The tools that judge their own repeats; the pipeline's loop guard leaves them alone.
pub const JUDGE_OWN_REPEATS: &[&str] = &[TOOL];

/// One identical call's submissions within the window, oldest first.
type Twins = Arc<tokio::sync::Mutex<Vec<(Instant, TaskId)>>>;

/// Refuses an agent's identical `execute_task` while too many of its twins are still active.
#[derive(Debug)]
pub struct RepeatedSubmissions {
    /// Refused from this many active identical submissions, this one included.
    limit: usize,
    window: Duration,
    calls: Mutex<HashMap<String, Twins>>,
}

impl RepeatedSubmissions {
    /// Refuses at the ladder's first step, counting submissions within `window` of this one.
    pub fn new(ladder: Ladder, window: Duration) -> Self {
        Self {
            limit: usize::try_from(ladder.warn).unwrap_or(usize::MAX),
            window,
            calls: Mutex::new(HashMap::new()),
        }
    }

    /// What makes two submissions identical: the agent and the canonical JSON of the call's
    /// arguments, as the pipeline's loop guard keys calls.
    pub(crate) fn identity(agent: &AgentId, args: &ExecuteTaskArgs) -> Result<String, ToolError> {
        let args = serde_json::to_value(args).map_err(|e| ToolError::Internal {
            message: format!("{TOOL} arguments as JSON: {e}"),
        })?;
        Ok(format!("{agent}\u{0}{}", call_key(TOOL, &args)))
    }

    /// Runs `submit` unless identical submissions (same [`RepeatedSubmissions::identity`])
    /// still active reach the limit. Identical calls are judged one at a time, so concurrent
    /// twins count each other.
    pub(crate) async fn submit(
        &self,
        engine: &Engine,
        agent: &AgentId,
        identity: String,
        submit: impl Future<Output = Result<Submitted, ToolError>>,
    ) -> Result<Submitted, ToolError> {
        let now = Instant::now();
        let twins = self.twins(identity, now);
        let mut earlier = twins.lock().await;
        earlier.retain(|(at, _)| now.saturating_duration_since(*at) <= self.window);
        let mut active = Vec::with_capacity(earlier.len());
        for (at, id) in earlier.drain(..) {
            if is_active(engine, agent, &id).await? {
                active.push((at, id));
            }
        }
        *earlier = active;
        if earlier.len() + 1 >= self.limit {
            return Err(self.refusal(&earlier));
        }
        let submitted = submit.await?;
        // An idempotency key hands back the earlier task: one task, counted once.
        if !earlier.iter().any(|(_, id)| *id == submitted.task.id) {
            earlier.push((now, submitted.task.id.clone()));
        }
        Ok(submitted)
    }

    /// The submissions of this call, after forgetting calls nobody made within the window.
    fn twins(&self, key: String, now: Instant) -> Twins {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.retain(|_, twins| {
            // Held or waited for by a call in flight: that call still needs it.
            Arc::strong_count(twins) > 1
                || twins.try_lock().is_ok_and(|list| {
                    list.last()
                        .is_some_and(|(at, _)| now.saturating_duration_since(*at) <= self.window)
                })
        });
        calls.entry(key).or_default().clone()
    }

    fn refusal(&self, active: &[(Instant, TaskId)]) -> ToolError {
        let ids: Vec<String> = active.iter().map(|(_, id)| id.to_string()).collect();
        ToolError::Denied {
            tool: TOOL.to_owned(),
            reason: format!(
                "loop guard: this exact {TOOL} call was repeated {} times within {}s while \
                 the earlier tasks are still queued or running ({}), so it was not queued again; \
                 follow those with get_task_status, cancel them, or change the task",
                active.len() + 1,
                self.window.as_secs(),
                ids.join(", ")
            ),
        }
    }
}

/// Whether the task is still queued, running, paused or waiting for input (a purged task is
/// not).
async fn is_active(engine: &Engine, agent: &AgentId, id: &TaskId) -> Result<bool, ToolError> {
    match engine
        .status(&handoff_task::Principal::Agent(agent.clone()), id)
        .await
    {
        Ok(view) => Ok(!view.task.status.is_terminal()),
        Err(EngineError::NotFound(_)) => Ok(false),
        Err(e) => Err(tool_error(TOOL, e)),
    }
}
