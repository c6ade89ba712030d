//! The loop guard of one run, owned by its supervisor: the executor's tool calls already
//! counted, the permissions denied after repeats, and how often a Stop hook refused the end.
//! It lives and dies with the run; a caller's message starts it over.

use std::collections::HashSet;

use handoff_policy::loop_guard::{Ladder, LoopGuard, Step, call_key};
use handoff_task::TaskId;
use serde_json::Value;

/// One run's loop guard.
pub(super) struct RunGuard {
    guard: LoopGuard,
    key: String,
    /// Tool calls already counted (their events repeat as the call progresses).
    seen: HashSet<String>,
    /// Permissions whose requests are denied after the loop guard's deny step.
    denied: HashSet<String>,
    /// Consecutive Stop-hook blocks.
    stop_blocks: u32,
}

impl RunGuard {
    pub(super) fn new(ladder: Ladder, task: &TaskId) -> Self {
        Self {
            guard: LoopGuard::new(ladder),
            key: task.to_string(),
            seen: HashSet::new(),
            denied: HashSet::new(),
            stop_blocks: 0,
        }
    }

    /// Feeds one executor tool event; returns the step reached by a newly seen call (repeated
    /// events of one call count once).
    pub(super) fn tool_call(&mut self, data: &Value) -> Option<(String, Step)> {
        let tool = data.get("tool").and_then(Value::as_str)?;
        let input = data.get("input")?;
        let call = data
            .get("call_id")
            .and_then(Value::as_str)
            .map_or_else(|| call_key(tool, input), str::to_owned);
        if !self.seen.insert(call) {
            return None;
        }
        let step = self.guard.check(&self.key, tool, input);
        if matches!(step, Step::Deny { .. } | Step::Stop { .. }) {
            let permission = if tool == "write" { "edit" } else { tool };
            self.denied.insert(permission.to_owned());
        }
        Some((tool.to_owned(), step))
    }

    /// Whether requests for `permission` are denied after repeated identical calls.
    pub(super) fn denies(&self, permission: &str) -> bool {
        self.denied.contains(permission)
    }

    /// A caller's message arrived: the guard starts over.
    pub(super) fn reset(&mut self) {
        self.guard.reset(&self.key);
        self.denied.clear();
        self.stop_blocks = 0;
    }

    /// Whether a Stop hook already refused this run's end.
    pub(super) fn stop_hook_active(&self) -> bool {
        self.stop_blocks > 0
    }

    /// Counts a Stop-hook block; whether the task may still be continued (under `cap`).
    pub(super) fn stop_block(&mut self, cap: u32) -> bool {
        self.stop_blocks += 1;
        self.stop_blocks <= cap
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn guard() -> RunGuard {
        let ladder = Ladder {
            warn: 2,
            deny: 3,
            stop: 4,
        };
        RunGuard::new(ladder, &TaskId::generate().unwrap())
    }

    #[test]
    fn repeated_calls_climb_the_ladder_and_a_message_starts_over() {
        let mut g = guard();
        let call = |n: u32| json!({"tool": "bash", "input": {"command": "ls"}, "call_id": format!("c{n}")});
        let steps: Vec<Step> = (0..4)
            .filter_map(|n| g.tool_call(&call(n)))
            .map(|(_, s)| s)
            .collect();
        assert!(matches!(steps[3], Step::Stop { .. }), "{steps:?}");
        assert!(g.denies("bash"));
        // The same call's later events count once.
        assert!(g.tool_call(&call(3)).is_none());
        g.reset();
        assert!(!g.denies("bash"));
        assert!(matches!(g.tool_call(&call(9)), Some((_, Step::Proceed))));
    }

    #[test]
    fn stop_blocks_are_capped() {
        let mut g = guard();
        assert!(!g.stop_hook_active());
        assert!(g.stop_block(2) && g.stop_block(2));
        assert!(g.stop_hook_active());
        assert!(!g.stop_block(2));
    }
}
