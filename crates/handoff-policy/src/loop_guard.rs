//! The loop guard: an agent calling the same tool with the same arguments again and again, or
//! cycling between a few calls (A, B, A, B…), is refused before the call runs, then denied,
//! then stopped. A call's key is its tool name plus the canonical JSON of its arguments, so key
//! order does not matter.

use std::{
    collections::{HashMap, VecDeque},
    time::{Duration, Instant},
};

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

impl Ladder {
    /// The step for a call whose caller's recent calls (oldest first, this one last) are
    /// `history`.
    pub fn judge(&self, history: &[&str]) -> Step {
        let repeats = repeats(history);
        if repeats >= self.stop {
            Step::Stop { repeats }
        } else if repeats >= self.deny {
            Step::Deny { repeats }
        } else if repeats >= self.warn {
            Step::Warn { repeats }
        } else {
            Step::Proceed
        }
    }
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
pub const HISTORY: usize = 64;

/// Per-session call history.
#[derive(Debug, Default)]
pub struct LoopGuard {
    ladder: Ladder,
    window: Option<Duration>,
    sessions: HashMap<String, VecDeque<(Instant, String)>>,
}

impl LoopGuard {
    /// A guard with this ladder; every call of a session counts until [`LoopGuard::reset`].
    pub fn new(ladder: Ladder) -> Self {
        Self {
            ladder,
            window: None,
            sessions: HashMap::new(),
        }
    }

    /// Only calls within `window` of each other count (a repeat an hour later is not a loop).
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = Some(window);
        self
    }

    /// Records a call of `tool` with `args` in `session` and judges it (before it runs).
    pub fn check(&mut self, session: &str, tool: &str, args: &Value) -> Step {
        self.check_at(session, tool, args, Instant::now())
    }

    /// [`LoopGuard::check`] at a given time (tests inject the clock).
    pub fn check_at(&mut self, session: &str, tool: &str, args: &Value, now: Instant) -> Step {
        self.check_key_at(session, call_key(tool, args), now)
    }

    /// [`LoopGuard::check`] of a call already keyed with [`call_key`].
    pub fn check_key(&mut self, session: &str, key: String) -> Step {
        self.check_key_at(session, key, Instant::now())
    }

    fn check_key_at(&mut self, session: &str, key: String, now: Instant) -> Step {
        let history = self.sessions.entry(session.to_owned()).or_default();
        if let Some(window) = self.window {
            while history
                .front()
                .is_some_and(|(at, _)| now.saturating_duration_since(*at) > window)
            {
                history.pop_front();
            }
        }
        if history.len() == HISTORY {
            history.pop_front();
        }
        history.push_back((now, key));
        let keys: Vec<&str> = history.iter().map(|(_, k)| k.as_str()).collect();
        self.ladder.judge(&keys)
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
fn repeats(history: &[&str]) -> u32 {
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
    fn with_a_window_old_calls_stop_counting() {
        let mut guard = LoopGuard::new(Ladder::default()).with_window(Duration::from_secs(600));
        let args = json!({"task_description": "nightly check"});
        let start = Instant::now();
        for hour in 0..5 {
            let at = start + Duration::from_secs(3600 * hour);
            assert_eq!(
                guard.check_at("s", "execute_task", &args, at),
                Step::Proceed
            );
        }
        let soon = start + Duration::from_secs(3600 * 5);
        guard.check_at("s", "execute_task", &args, soon);
        guard.check_at("s", "execute_task", &args, soon + Duration::from_secs(1));
        let step = guard.check_at("s", "execute_task", &args, soon + Duration::from_secs(2));
        assert_eq!(step, Step::Warn { repeats: 3 });
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
