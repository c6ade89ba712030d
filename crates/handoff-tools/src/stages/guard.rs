//! The loop guard over Handoff's tool calls, per agent. Reading tools are exempt: polling a
//! task's status with the same arguments is how an agent waits, not a loop. So are tools that
//! judge their own repeats with facts this stage cannot see before the call (`execute_task`
//! counts only identical submissions still active). One instance keeps each caller's history
//! in memory; instances sharing a store keep it there, so a caller whose calls land on several
//! instances meets the same ladder.

use std::{borrow::Cow, sync::Mutex, time::Duration};

use futures::future::BoxFuture;
use handoff_engine::Engine;
use handoff_policy::loop_guard::{HISTORY, Ladder, LoopGuard as Detector, Step, call_key};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{
    ToolContext, ToolDefinition,
    pipeline::{GuardVerdict, LoopGuard},
};

/// Refuses an agent's identical repeats of a changing tool call (warn, deny, stop).
#[derive(Debug)]
pub struct CallLoopGuard {
    detector: Mutex<Detector>,
    ladder: Ladder,
    window: Duration,
    /// The engine whose shared store keeps the history, when instances share one.
    shared: Option<Engine>,
    exempt: &'static [&'static str],
}

impl CallLoopGuard {
    /// A guard climbing `ladder`, counting calls within `window` of each other.
    pub fn new(ladder: Ladder, window: Duration) -> Self {
        Self {
            detector: Mutex::new(Detector::new(ladder).with_window(window)),
            ladder,
            window,
            shared: None,
            exempt: &[],
        }
    }

    /// Keeps the history in `engine`'s store when other instances share it.
    pub fn shared_through(mut self, engine: &Engine) -> Self {
        self.shared = engine.shares_store().then(|| engine.clone());
        self
    }

    /// Leaves the calls of `tools` (canonical names) uncounted: they judge their own repeats.
    pub fn except(mut self, tools: &'static [&'static str]) -> Self {
        self.exempt = tools;
        self
    }

    /// The step from the history the instances share; this instance's own when the store
    /// cannot be reached, so a store outage never lifts the guard.
    async fn judged_shared(&self, engine: &Engine, caller: &str, key: String) -> Step {
        let digest = digest(&key);
        let keep = u32::try_from(HISTORY).unwrap_or(u32::MAX);
        match engine.record_call(caller, &digest, self.window, keep).await {
            Ok(history) => {
                let keys: Vec<&str> = history.iter().map(String::as_str).collect();
                self.ladder.judge(&keys)
            }
            Err(e) => {
                tracing::warn!(error = %e, "loop guard: the shared history is unreachable; this instance's is used");
                self.judged_here(caller, key)
            }
        }
    }

    fn judged_here(&self, caller: &str, key: String) -> Step {
        self.detector
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .check_key(caller, key)
    }
}

/// The hex SHA-256 of a call key: what the store keeps of a call, for both loop guards. Stable
/// across builds and instances (unlike std's hasher) and collision-resistant, since it decides
/// refusals.
pub(crate) fn digest(key: &str) -> String {
    use std::fmt::Write;
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(key.as_bytes()) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The arguments that make a call what it is: `agent_id` is who calls (the guard keys its
/// history by that), so naming oneself or not is the same call.
fn without_caller(args: &Value) -> Cow<'_, Value> {
    match args {
        Value::Object(map) if map.contains_key("agent_id") => {
            let mut map = map.clone();
            map.remove("agent_id");
            Cow::Owned(Value::Object(map))
        }
        _ => Cow::Borrowed(args),
    }
}

impl LoopGuard for CallLoopGuard {
    fn check<'a>(
        &'a self,
        ctx: &'a ToolContext,
        tool: &'a ToolDefinition,
        args: &'a Value,
    ) -> BoxFuture<'a, GuardVerdict> {
        Box::pin(async move {
            if tool.annotations.read_only || self.exempt.contains(&tool.name) {
                return GuardVerdict::Proceed;
            }
            let caller = ctx
                .agent_id
                .as_ref()
                .map(ToString::to_string)
                .or_else(|| ctx.session_id.clone())
                .unwrap_or_default();
            let key = call_key(tool.name, &without_caller(args));
            let step = match &self.shared {
                Some(engine) => self.judged_shared(engine, &caller, key).await,
                None => self.judged_here(&caller, key),
            };
            match step.message(tool.name) {
                Some(message) if step != Step::Proceed => GuardVerdict::Refuse(message),
                _ => GuardVerdict::Proceed,
            }
        })
    }
}
