//! The engine's side of the model gateway (the HTTP side is `handoff-server`'s `gateway`): who
//! a task model token belongs to, whether that run may still call a model (alive, its claim
//! current, its token and cost budget not spent), and what each call cost — counted per task,
//! said on the task as an event, and the run stopped (`budget_exhausted`) by the call that
//! would pass its budget.
//!
//! Durable: each call as an event whose `data.gateway_call` holds its tokens, cost, model,
//! latency and status (what a restarted process counts again). In memory: the gateway's URL and
//! key (set once the server listens) and each task's running total, rebuilt from the events the
//! first time a task calls after a start.

use std::sync::Arc;

use handoff_config::model_token_owner;
use handoff_protocol::TaskCommand;
use handoff_runner::AgentEnv;
use handoff_task::{EventKind, NewEvent, Task, TaskId};
use serde_json::json;

use crate::{
    Engine,
    gateway_slots::SlotEnv,
    gateway_state::{GatewayAccess, Spent},
    plan::CompletionPlan,
};

/// One model call as the gateway saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCall {
    /// The provider that answered (its name).
    pub provider: String,
    /// The wire (`openai_chat`, `openai_responses`, `anthropic`).
    pub wire: &'static str,
    /// The model that answered (or was asked for).
    pub model: Option<String>,
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache.
    pub cached_tokens: u64,
    /// The provider reported usage at all.
    pub reported: bool,
    /// The provider's HTTP status.
    pub status: u16,
    /// From the request to the answer's end, in milliseconds.
    pub latency_ms: u64,
}

/// Why the gateway turns a call away.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GatewayRefusal {
    /// No task model token, or not one of this server's.
    #[error("not a task model token of this server")]
    Unauthorized,
    /// The run the token was made for is over.
    #[error("the task's run this token was made for has ended")]
    RunEnded,
    /// The call would pass the task's budget: the run is to be stopped once the caller has the
    /// refusal ([`Engine::gateway_exhaust`]).
    #[error("budget_exhausted: {why}")]
    Budget {
        /// The task.
        task: TaskId,
        /// Which cap, in words.
        why: String,
    },
    /// The task or its agent called more often than a `models.*_calls_per_minute` allows.
    #[error("rate limited by {setting}: retry in {} s", retry_after.as_secs().max(1))]
    RateLimited {
        /// The setting whose rate was met.
        setting: &'static str,
        /// How long until a call is admitted.
        retry_after: std::time::Duration,
    },
    /// The task could not be read.
    #[error("the task store did not answer: {0}")]
    Unavailable(String),
}

/// What a run of `task` gets to reach the gateway instead of the provider: the variables to
/// set, and the provider key's variable to keep from it (nothing while no gateway serves).
pub(crate) fn run_env(
    inner: &crate::state::EngineState,
    task: &Task,
) -> (Vec<(String, String)>, Vec<String>) {
    let models = &inner.config.models;
    if !models.serves(&task.executor) {
        return (Vec::new(), Vec::new());
    }
    let env = inner.gateway.env_for(&task.id, task.fence);
    if env.is_empty() {
        return (env, Vec::new());
    }
    let hidden = crate::gateway_slots::hidden_keys(&key_envs(models), &env);
    (env, hidden)
}

/// Waits, for a run of `task` the gateway serves, until the gateway is open (or known never to
/// be): the scheduler claims tasks from the engine's start, before the server has bound the
/// listener the gateway's URL names, and a run started meanwhile would get no way to its model.
pub(crate) async fn ready(inner: &crate::state::EngineState, task: &Task) {
    if inner.config.models.serves(&task.executor) {
        inner.gateway.settled().await;
    }
}

/// The variables the providers' keys are read from.
fn key_envs(models: &handoff_config::ModelsConfig) -> Vec<String> {
    models.key_envs().into_iter().map(str::to_owned).collect()
}

impl Engine {
    /// Opens the gateway to the runs that start from now on (once; later calls are ignored).
    pub fn open_gateway(&self, access: GatewayAccess) {
        self.inner.gateway.open(access);
    }

    /// Says the gateway will not open in this process (no HTTP listener: `serve --stdio`): runs
    /// waiting for it start without it. Ignored once it is open.
    pub fn close_gateway(&self) {
        self.inner.gateway.close();
    }

    /// What agents `executor` starts ahead of their tasks get to reach the model through the
    /// gateway; `None` when the gateway does not serve that executor or is not open yet.
    pub fn agent_env(&self, executor: &str) -> Option<Arc<dyn AgentEnv>> {
        let models = &self.inner.config.models;
        if !models.serves(executor) || self.inner.gateway.access().is_none() {
            return None;
        }
        Some(Arc::new(SlotEnv {
            gateway: Arc::clone(&self.inner.gateway),
            key_envs: key_envs(models),
        }))
    }

    /// The task whose current run `token` was made for, if it may call a model now: `expect`
    /// is what the call is expected to take on top of what the task spent (its `max_tokens`).
    /// A call that would pass the budget is refused; the caller stops the run once the agent
    /// has that answer ([`Engine::gateway_exhaust`]).
    pub async fn gateway_admit(&self, token: &str, expect: u64) -> Result<Task, GatewayRefusal> {
        let access = self
            .inner
            .gateway
            .access()
            .ok_or(GatewayRefusal::Unauthorized)?;
        let (id, fence) =
            model_token_owner(&access.key, token).ok_or(GatewayRefusal::Unauthorized)?;
        let id = TaskId::parse(&id).map_err(|_| GatewayRefusal::Unauthorized)?;
        // A pooled agent's token names its slot; the run that claimed it says whose it is.
        let (id, fence) = self.inner.slots.bound(&id).unwrap_or((id, fence));
        let task = self
            .inner
            .store
            .get_task(&id)
            .await
            .map_err(|e| GatewayRefusal::Unavailable(e.to_string()))?
            .ok_or(GatewayRefusal::RunEnded)?;
        if task.fence != fence || !task.status.is_active() {
            return Err(GatewayRefusal::RunEnded);
        }
        let store = &*self.inner.store;
        let rated = self.inner.gateway_rates.take(store, &task).await;
        if let Err(refused) = rated.map_err(|e| GatewayRefusal::Unavailable(e.to_string()))? {
            return Err(GatewayRefusal::RateLimited {
                setting: refused.setting,
                retry_after: refused.retry_after,
            });
        }
        let spent = self.spent(&task).await?;
        let budget = CompletionPlan::new(&self.inner.config.completion, &task).budget;
        let next = spent.tokens + expect.max(spent.last_call);
        let over = match (budget.tokens, budget.cost_usd) {
            (Some(cap), _) if next > cap => Some(format!(
                "{cap} tokens: {} spent through the gateway, the next call would take about {}",
                spent.tokens,
                next - spent.tokens
            )),
            (_, Some(cap)) if spent.cost_usd >= cap => Some(format!(
                "${cap:.2}: ${:.4} spent through the gateway",
                spent.cost_usd
            )),
            _ => None,
        };
        match over {
            Some(why) => Err(GatewayRefusal::Budget { task: task.id, why }),
            None => Ok(task),
        }
    }

    /// Counts `call` of `task` and says it on the task.
    pub async fn gateway_spent(&self, task: &Task, call: ModelCall) {
        let tokens = call.input_tokens + call.output_tokens;
        let priced = handoff_config::CallTokens {
            input: call.input_tokens,
            output: call.output_tokens,
            cached: call.cached_tokens,
        };
        let cost = self
            .inner
            .config
            .models
            .cost(&call.provider, call.model.as_deref(), priced);
        let spent = Spent::call(
            call.input_tokens,
            call.output_tokens,
            call.cached_tokens,
            cost,
        );
        let total = self.inner.gateway.add(&task.id, task.fence, &spent);
        let model = call.model.clone().unwrap_or_else(|| "?".to_owned());
        let message = format!(
            "model call {model}: {} in ({} cached) / {} out tokens, {} ms, HTTP {}",
            call.input_tokens, call.cached_tokens, call.output_tokens, call.latency_ms, call.status
        );
        let event = NewEvent::new(EventKind::Model, message).with_data(json!({
            // So a later count reads one event, not every call (see `gateway_usage`).
            "total": total.and_then(|t| serde_json::to_value(t).ok()),
            "gateway_call": {
                "provider": call.provider,
                "wire": call.wire,
                "model": call.model,
                "input_tokens": call.input_tokens,
                "output_tokens": call.output_tokens,
                "cached_tokens": call.cached_tokens,
                "usage_reported": call.reported,
                "cost_usd": cost,
                "status": call.status,
                "latency_ms": call.latency_ms,
            }
        }));
        if let Err(e) = self.inner.record(&task.id, event).await {
            tracing::warn!(task = %task.id, error = %e, "could not record a model call");
        }
        self.inner
            .metrics
            .gateway_call(call.wire, call.status, tokens, cost);
    }

    /// What `task` spent through the gateway: the running total, or counted from its events.
    async fn spent(&self, task: &Task) -> Result<Spent, GatewayRefusal> {
        self.gateway_total(task)
            .await
            .map_err(|e| GatewayRefusal::Unavailable(e.to_string()))
    }

    /// Stops `task`'s run because its budget is spent, saying so on the task: called once the
    /// refused call's answer is on its way, so the agent reads why before it is stopped.
    pub async fn gateway_exhaust(&self, task: &TaskId, why: &str) {
        let note = NewEvent::new(
            EventKind::Log,
            format!("budget exhausted at the model gateway: {why} — stopping the run"),
        )
        .with_data(json!({ "budget": why, "by": "gateway" }));
        if let Err(e) = self.inner.record(task, note).await {
            tracing::warn!(task = %task, error = %e, "could not record the budget stop");
        }
        let command = TaskCommand::Exhaust {
            reason: why.to_owned(),
        };
        if let Err(e) = self.commands().send(task, command).await {
            tracing::warn!(task = %task, error = %e, "could not stop the run at its budget");
        }
    }
}
