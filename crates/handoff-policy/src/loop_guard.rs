//! The loop guard: an agent calling the same tool with the same arguments again and again, or
//! cycling between a few calls (A, B, A, B…), is refused before the call runs, then denied,
//! then stopped. A call's key is its tool name plus the canonical JSON of its arguments, so key
//! order does not matter.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How many repeats lead to which step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ladder {
    /// From this many repeats the call is not executed; the caller gets an explanation.
    pub warn: u32,
    /// From this many the call is denied outright.
    pub deny: u32,
    /// From this many the session's task is stopped as `stuck`.
    pub stop: u32,
}

impl Default for Ladder {
    fn default() -> Self {
        Self {
            warn: 3,
            deny: 5,
            stop: 8,
        }
    }
}

/// What the guard says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Not a loop (yet).
    Proceed,
    /// Do not execute; tell the caller why (the call repeated `repeats` times).
    Warn {
        /// Repeats so far, this call included.
        repeats: u32,
    },
    /// Refuse.
    Deny {
        /// Repeats so far, this call included.
        repeats: u32,
    },
    /// Stop the task as stuck.
    Stop {
        /// Repeats so far, this call included.
        repeats: u32,
    },
}

impl Step {
    /// The explanation given to the caller, or `None` for [`Step::Proceed`].
    pub fn message(&self, tool: &str) -> Option<String> {
        Some(match self {
            Step::Proceed => return None,
            Step::Warn { repeats } => format!(
                "loop guard: this exact {tool} call was repeated {repeats} times without anything changing, so it was not run again; change the arguments or try another approach"
            ),
            Step::Deny { repeats } => {
                format!("loop guard: {tool} call denied after {repeats} identical repeats")
            }
            Step::Stop { repeats } => format!(
                "loop guard: stopped as stuck after {repeats} repeats of the same {tool} call"
            ),
        })
    }
}

/// The longest cycle recognised (A,B,C,A,B,C…).
const MAX_PERIOD: usize = 3;
/// Calls remembered per session.
const HISTORY: usize = 64;

/// Per-session call history.
#[derive(Debug, Default)]
pub struct LoopGuard {
    ladder: Ladder,
    sessions: HashMap<String, VecDeque<String>>,
}

impl LoopGuard {
    /// A guard with this ladder.
    pub fn new(ladder: Ladder) -> Self {
        Self {
            ladder,
            sessions: HashMap::new(),
        }
    }

    /// Records a call of `tool` with `args` in `session` and judges it (before it runs).
    pub fn check(&mut self, session: &str, tool: &str, args: &Value) -> Step {
        let key = call_key(tool, args);
        let history = self.sessions.entry(session.to_owned()).or_default();
        if history.len() == HISTORY {
            history.pop_front();
        }
        history.push_back(key);
        let repeats = repeats(history.make_contiguous());
        let ladder = self.ladder;
        if repeats >= ladder.stop {
            Step::Stop { repeats }
        } else if repeats >= ladder.deny {
            Step::Deny { repeats }
        } else if repeats >= ladder.warn {
            Step::Warn { repeats }
        } else {
            Step::Proceed
        }
    }

    /// Forgets a session's history (a new caller message, a finished task).
    pub fn reset(&mut self, session: &str) {
        self.sessions.remove(session);
    }
}

/// `tool` plus the canonical JSON of `args` (object keys sorted at every depth).
pub fn call_key(tool: &str, args: &Value) -> String {
    format!("{tool}\u{0}{}", canonical(args))
}

fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(canonical).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

/// How many times the trailing call, or trailing cycle of up to [`MAX_PERIOD`] calls, repeats.
fn repeats(history: &[String]) -> u32 {
    let n = history.len();
    let mut best = 1;
    for period in 1..=MAX_PERIOD.min(n) {
        let tail = &history[n - period..];
        // A "cycle" of identical calls is a run, counted with period 1.
        if period > 1 && tail.iter().all(|k| k == &tail[0]) {
            continue;
        }
        let mut len = period;
        while len < n && history[n - 1 - len] == history[n - 1 - len + period] {
            len += 1;
        }
        best = best.max(len / period);
    }
    u32::try_from(best).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_order_does_not_matter() {
        assert_eq!(
            call_key("t", &json!({"a": 1, "b": {"x": [1, 2], "y": null}})),
            call_key("t", &json!({"b": {"y": null, "x": [1, 2]}, "a": 1}))
        );
        assert_ne!(
            call_key("t", &json!({"a": 1})),
            call_key("u", &json!({"a": 1}))
        );
    }

    #[test]
    fn identical_calls_climb_the_ladder() {
        let mut guard = LoopGuard::new(Ladder::default());
        let args = json!({"task_id": "t1"});
        let steps: Vec<Step> = (0..8).map(|_| guard.check("s", "get", &args)).collect();
        assert_eq!(steps[0], Step::Proceed);
        assert_eq!(steps[1], Step::Proceed);
        assert_eq!(steps[2], Step::Warn { repeats: 3 });
        assert_eq!(steps[4], Step::Deny { repeats: 5 });
        assert_eq!(steps[7], Step::Stop { repeats: 8 });
    }

    #[test]
    fn short_cycles_are_caught() {
        let mut guard = LoopGuard::new(Ladder::default());
        let (a, b) = (json!({"x": 1}), json!({"x": 2}));
        let mut last = Step::Proceed;
        for _ in 0..3 {
            guard.check("s", "t", &a);
            last = guard.check("s", "t", &b);
        }
        assert_eq!(last, Step::Warn { repeats: 3 });
    }

    #[test]
    fn a_different_call_breaks_the_run_and_sessions_are_separate() {
        let mut guard = LoopGuard::new(Ladder::default());
        let args = json!({});
        guard.check("s", "t", &args);
        guard.check("s", "t", &args);
        assert_eq!(guard.check("other", "t", &args), Step::Proceed);
        guard.check("s", "u", &args);
        assert_eq!(guard.check("s", "t", &args), Step::Proceed);
    }

    #[test]
    fn reset_forgets_the_history() {
        let mut guard = LoopGuard::new(Ladder::default());
        let args = json!({});
        guard.check("s", "t", &args);
        guard.check("s", "t", &args);
        guard.reset("s");
        assert_eq!(guard.check("s", "t", &args), Step::Proceed);
    }

    #[test]
    fn the_ladder_is_configurable() {
        let mut guard = LoopGuard::new(Ladder {
            warn: 2,
            deny: 3,
            stop: 4,
        });
        let args = json!({});
        assert_eq!(guard.check("s", "t", &args), Step::Proceed);
        assert_eq!(guard.check("s", "t", &args), Step::Warn { repeats: 2 });
        assert_eq!(guard.check("s", "t", &args), Step::Deny { repeats: 3 });
        assert_eq!(guard.check("s", "t", &args), Step::Stop { repeats: 4 });
    }
}
