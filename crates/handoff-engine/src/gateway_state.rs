//! The model gateway's state in the engine (see [`crate::gateway`]): its URL and key, set once
//! the server listens (runs the gateway serves wait for that, or for word that it never will),
//! and each task's running total — plain data, importing nothing of the engine's layers. All in
//! memory: the totals are read back from the tasks' model call events.

use std::{
    collections::HashMap,
    sync::{Mutex, OnceLock},
};

use handoff_config::{Secret, model_token};
use handoff_task::TaskId;

/// Running totals kept at most; past it the map starts over (totals are counted again from
/// the tasks' events).
const MAX_LEDGER: usize = 10_000;

/// Where a task's agent reaches the gateway, and the key its tokens are made with.
#[derive(Debug, Clone)]
pub struct GatewayAccess {
    /// The gateway's base URL (`http://127.0.0.1:<port>/gateway`).
    pub url: String,
    /// The key task model tokens are made and checked with.
    pub key: Secret,
}

/// The gateway's state in the engine.
#[derive(Debug)]
pub(crate) struct GatewayState {
    access: OnceLock<GatewayAccess>,
    /// `None` until the server says whether the gateway serves: `Some(true)` once it is open,
    /// `Some(false)` when it never will (no HTTP listener).
    settled: tokio::sync::watch::Sender<Option<bool>>,
    ledger: Mutex<HashMap<TaskId, Spent>>,
}

impl Default for GatewayState {
    fn default() -> Self {
        Self {
            access: OnceLock::new(),
            settled: tokio::sync::watch::Sender::new(None),
            ledger: Mutex::default(),
        }
    }
}

/// What one task's calls through the gateway spent (as a model call's event records the
/// task's total so far, its claim left out).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Spent {
    /// Input and output tokens.
    pub tokens: u64,
    /// US dollars.
    pub cost_usd: f64,
    /// The tokens of the last call: what the next one is expected to take.
    pub last_call: u64,
    /// Calls counted.
    pub calls: u64,
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache.
    pub cached_tokens: u64,
    /// The task's claim (fence) the total was counted for: after another claim the task may
    /// have called through another instance, so a total of an earlier one is counted again.
    #[serde(skip)]
    pub fence: i64,
}

impl Spent {
    /// One call's spending: `input` tokens (`cached` of them from the cache), `output` tokens
    /// and `cost_usd`.
    pub(crate) fn call(input: u64, output: u64, cached: u64, cost_usd: f64) -> Self {
        Self {
            tokens: input.saturating_add(output),
            cost_usd,
            last_call: input.saturating_add(output),
            calls: 1,
            input_tokens: input,
            output_tokens: output,
            cached_tokens: cached,
            fence: 0,
        }
    }

    /// Adds `call` (one call's [`Spent::call`]) to the total; it becomes the last call.
    pub(crate) fn add(&mut self, call: &Spent) {
        self.tokens = self.tokens.saturating_add(call.tokens);
        self.cost_usd += call.cost_usd;
        self.last_call = call.tokens;
        self.calls = self.calls.saturating_add(call.calls);
        self.input_tokens = self.input_tokens.saturating_add(call.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(call.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(call.cached_tokens);
    }
}

impl GatewayState {
    /// The environment a run of `task` under claim `fence` reaches the gateway with: the
    /// OpenAI and Anthropic base URLs and its token as their keys (none while the gateway is
    /// closed).
    pub(crate) fn env_for(&self, task: &TaskId, fence: i64) -> Vec<(String, String)> {
        let Some(access) = self.access.get() else {
            return Vec::new();
        };
        let token = model_token(&access.key, task.as_str(), fence);
        let token = token.expose().to_owned();
        vec![
            (
                "OPENAI_BASE_URL".into(),
                format!("{}/openai/v1", access.url),
            ),
            ("OPENAI_API_KEY".into(), token.clone()),
            (
                "ANTHROPIC_BASE_URL".into(),
                format!("{}/anthropic", access.url),
            ),
            ("ANTHROPIC_API_KEY".into(), token),
        ]
    }

    /// Opens the gateway (once; later calls are ignored).
    pub(crate) fn open(&self, access: GatewayAccess) {
        let _ = self.access.set(access);
        self.settled.send_replace(Some(true));
    }

    /// Says the gateway will not open (no listener to serve it); runs start without it.
    pub(crate) fn close(&self) {
        self.settled.send_if_modified(|settled| {
            let pending = settled.is_none();
            if pending {
                *settled = Some(false);
            }
            pending
        });
    }

    /// Waits until the gateway is open or known never to be.
    pub(crate) async fn settled(&self) {
        let mut settled = self.settled.subscribe();
        let _ = settled.wait_for(Option::is_some).await;
    }

    /// The gateway's URL and key, once open.
    pub(crate) fn access(&self) -> Option<&GatewayAccess> {
        self.access.get()
    }

    /// `task`'s running total, when kept.
    pub(crate) fn spent(&self, task: &TaskId) -> Option<Spent> {
        self.ledger.lock().ok()?.get(task).copied()
    }

    /// Keeps `spent` as `task`'s running total and returns the total kept: one already kept
    /// for the same claim stays, since calls added to it while `spent` was counted may be
    /// missing from `spent`.
    pub(crate) fn keep(&self, task: &TaskId, spent: Spent) -> Spent {
        let Ok(mut ledger) = self.ledger.lock() else {
            return spent;
        };
        if let Some(kept) = ledger.get(task).filter(|k| k.fence == spent.fence) {
            return *kept;
        }
        if ledger.len() >= MAX_LEDGER {
            ledger.clear();
        }
        ledger.insert(task.clone(), spent);
        spent
    }

    /// Adds `call` (one call's [`Spent::call`]) to `task`'s running total of claim `fence`,
    /// when kept; the total with it.
    pub(crate) fn add(&self, task: &TaskId, fence: i64, call: &Spent) -> Option<Spent> {
        let mut ledger = self.ledger.lock().ok()?;
        let spent = ledger.get_mut(task).filter(|s| s.fence == fence)?;
        spent.add(call);
        Some(*spent)
    }
}
