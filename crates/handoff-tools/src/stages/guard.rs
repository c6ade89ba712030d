//! The loop guard over Handoff's tool calls, per agent. Reading tools are exempt: polling a
//! task's status with the same arguments is how an agent waits, not a loop. So are tools that
//! judge their own repeats with facts this stage cannot see before the call (`execute_task`
//! counts only identical submissions still active).

use std::{sync::Mutex, time::Duration};

use handoff_policy::loop_guard::{Ladder, LoopGuard as Detector, Step};
use serde_json::Value;

use crate::{
    ToolContext, ToolDefinition,
    pipeline::{GuardVerdict, LoopGuard},
};

/// Refuses an agent's identical repeats of a changing tool call (warn, deny, stop).
#[derive(Debug)]
pub struct CallLoopGuard {
    detector: Mutex<Detector>,
    exempt: &'static [&'static str],
}

impl CallLoopGuard {
    /// A guard climbing `ladder`, counting calls within `window` of each other.
    pub fn new(ladder: Ladder, window: Duration) -> Self {
        Self {
            detector: Mutex::new(Detector::new(ladder).with_window(window)),
            exempt: &[],
        }
    }

    /// Leaves the calls of `tools` (canonical names) uncounted: they judge their own repeats.
    pub fn except(mut self, tools: &'static [&'static str]) -> Self {
        self.exempt = tools;
        self
    }
}

impl LoopGuard for CallLoopGuard {
    fn check(&self, ctx: &ToolContext, tool: &ToolDefinition, args: &Value) -> GuardVerdict {
        if tool.annotations.read_only || self.exempt.contains(&tool.name) {
            return GuardVerdict::Proceed;
        }
        let session = ctx
            .agent_id
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| ctx.session_id.clone())
            .unwrap_or_default();
        let step = self
            .detector
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .check(&session, tool.name, args);
        match step.message(tool.name) {
            Some(message) if step != Step::Proceed => GuardVerdict::Refuse(message),
            _ => GuardVerdict::Proceed,
        }
    }
}
