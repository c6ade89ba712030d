//! The model gateway's state in the engine (see [`crate::gateway`]): its URL and key, set once
//! the server listens, and each task's running total — plain data, importing nothing of the
//! engine's layers.

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
#[derive(Debug, Default)]
pub(crate) struct GatewayState {
    access: OnceLock<GatewayAccess>,
    ledger: Mutex<HashMap<TaskId, Spent>>,
}

/// What one task's calls through the gateway spent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Spent {
    /// Input and output tokens.
    pub tokens: u64,
    /// US dollars.
    pub cost_usd: f64,
    /// The tokens of the last call: what the next one is expected to take.
    pub last_call: u64,
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
    }

    /// The gateway's URL and key, once open.
    pub(crate) fn access(&self) -> Option<&GatewayAccess> {
        self.access.get()
    }

    /// `task`'s running total, when kept.
    pub(crate) fn spent(&self, task: &TaskId) -> Option<Spent> {
        self.ledger.lock().ok()?.get(task).copied()
    }

    /// Keeps `spent` as `task`'s running total.
    pub(crate) fn keep(&self, task: &TaskId, spent: Spent) {
        if let Ok(mut ledger) = self.ledger.lock() {
            if ledger.len() >= MAX_LEDGER {
                ledger.clear();
            }
            ledger.insert(task.clone(), spent);
        }
    }

    /// Adds one call to `task`'s running total, when kept.
    pub(crate) fn add(&self, task: &TaskId, tokens: u64, cost_usd: f64) {
        if let Ok(mut ledger) = self.ledger.lock()
            && let Some(spent) = ledger.get_mut(task)
        {
            spent.tokens += tokens;
            spent.cost_usd += cost_usd;
            spent.last_call = tokens;
        }
    }
}
