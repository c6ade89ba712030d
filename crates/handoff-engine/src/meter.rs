//! The task's budget (docs/completion.md, Steps: Budgets) while a run is in progress: the wall cap as a deadline, tokens and
//! cost as the run reports them on top of what earlier turns and judges spent. Checking only
//! between cycles let one long turn run far past its cap.

use std::time::Duration;

use handoff_completion::budget::{Budget, Spent};
use handoff_task::{EventKind, NewEvent, Task, TaskEvent, unix_millis_now};
use serde_json::Value;
use tokio::time::Instant;

use crate::{EngineError, state::EngineState, usage::Usage};

/// Events read for what earlier turns spent.
const EVENT_WINDOW: u32 = 5000;

/// What one task has spent, kept up to date while its run reports usage.
pub(crate) struct Meter {
    budget: Budget,
    started_at: Option<i64>,
    usage: Usage,
}

impl Meter {
    /// The meter of `task` under `budget` (the run plan's), counting what its earlier turns
    /// and judges spent.
    pub(crate) async fn start(
        inner: &EngineState,
        task: &Task,
        budget: Budget,
    ) -> Result<Self, EngineError> {
        let mut meter = Self {
            budget,
            started_at: task.started_at,
            usage: Usage::default(),
        };
        if budget.tokens.is_some() || budget.cost_usd.is_some() {
            let events = inner.store.recent_events(&task.id, EVENT_WINDOW).await?;
            meter.count_earlier(&events);
        }
        Ok(meter)
    }

    fn count_earlier(&mut self, events: &[TaskEvent]) {
        let (mut judge_tokens, mut judge_cost) = (0, 0.0);
        for event in events {
            self.add(&event.data);
            // The evaluator's continuations carry the judges' running totals.
            if event.kind == EventKind::Verdict && event.data.get("continuation_prompt").is_some() {
                judge_tokens = event.data["judge_tokens"].as_u64().unwrap_or(judge_tokens);
                judge_cost = event.data["judge_cost_usd"].as_f64().unwrap_or(judge_cost);
            }
        }
        self.usage.tokens += judge_tokens;
        self.usage.cost_usd += judge_cost;
    }

    /// When the wall cap runs out, if there is one.
    pub(crate) fn wall_deadline(&self) -> Option<Instant> {
        let wall = self.budget.wall?;
        Some(Instant::now() + wall.saturating_sub(self.elapsed()))
    }

    fn elapsed(&self) -> Duration {
        let since = self
            .started_at
            .map_or(0, |start| unix_millis_now().saturating_sub(start));
        Duration::from_millis(u64::try_from(since).unwrap_or(0))
    }

    /// Counts the usage one executor event reports (a model step's tokens and cost).
    pub(crate) fn add(&mut self, data: &Value) {
        self.usage.add(data);
    }

    /// The first cap reached (turns are counted between runs, not here), in words.
    pub(crate) fn exhausted(&self) -> Option<String> {
        let budget = Budget {
            turns: None,
            ..self.budget
        };
        budget.exhausted(&Spent {
            wall: self.elapsed(),
            turns: 0,
            tokens: self.usage.tokens,
            cost_usd: self.usage.cost_usd,
        })
    }

    /// The first cap reached before another turn, after `turns` turns and `judged` (tokens,
    /// cost) spent by judges the events do not show.
    pub(crate) fn before_turn(&self, turns: u32, judged: (u64, f64)) -> Option<String> {
        self.budget.exhausted(&Spent {
            wall: self.elapsed(),
            turns,
            tokens: self.usage.tokens + judged.0,
            cost_usd: self.usage.cost_usd + judged.1,
        })
    }

    /// Why the run stops at the wall deadline (the two clocks may differ by a millisecond).
    pub(crate) fn exhausted_at_wall(&self) -> String {
        self.exhausted().unwrap_or_else(|| {
            let wall = self.budget.wall.unwrap_or_default();
            format!("wall time {}s reached", wall.as_secs())
        })
    }
}

/// A note that the budget stopped the run now, for the task's history.
pub(crate) fn stop_note(why: &str) -> NewEvent {
    NewEvent::new(
        EventKind::Log,
        format!("budget exhausted: {why} — stopping the run"),
    )
    .with_data(serde_json::json!({ "budget": why }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter(budget: Budget) -> Meter {
        Meter {
            budget,
            started_at: Some(unix_millis_now()),
            usage: Usage::default(),
        }
    }

    #[test]
    fn tokens_and_cost_reported_during_the_run_reach_the_caps() {
        let mut m = meter(Budget {
            tokens: Some(100),
            turns: Some(1),
            ..Budget::default()
        });
        assert_eq!(m.exhausted(), None, "turns are not a cap within a run");
        m.add(&serde_json::json!({"tokens": {"input": 60, "output": 30}}));
        assert_eq!(m.exhausted(), None);
        m.add(&serde_json::json!({"tokens": {"input": 5, "output": 5}}));
        assert!(m.exhausted().is_some_and(|w| w.contains("100 tokens")));
        let mut m = meter(Budget {
            cost_usd: Some(0.5),
            ..Budget::default()
        });
        m.add(&serde_json::json!({"cost": 0.6}));
        assert!(m.exhausted().is_some_and(|w| w.contains("$0.50")));
    }

    #[test]
    fn the_wall_deadline_counts_from_the_tasks_start() {
        let mut m = meter(Budget {
            wall: Some(Duration::from_secs(3)),
            ..Budget::default()
        });
        m.started_at = Some(unix_millis_now() - 2_000);
        let left = m.wall_deadline().map(|d| d - Instant::now());
        assert!(left.is_some_and(|l| l <= Duration::from_millis(1_000)));
        m.started_at = Some(unix_millis_now() - 4_000);
        assert!(m.exhausted().is_some_and(|w| w.contains("wall time 3s")));
        assert!(meter(Budget::default()).wall_deadline().is_none());
    }
}
