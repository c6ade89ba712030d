//! Budgets (docs/completion.md, Steps: Budgets): caps on wall time, turns, tokens and cost per
//! task. When one runs out the task stops cleanly and still returns its diff and summary
//! (`budget_exhausted`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The caps (absent = no cap).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Wall time from the first start.
    pub wall: Option<Duration>,
    /// Executor turns (the first run plus continuations).
    pub turns: Option<u32>,
    /// Tokens (executor and judge).
    pub tokens: Option<u64>,
    /// USD (executor and judge).
    pub cost_usd: Option<f64>,
}

/// What was spent so far.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spent {
    /// Wall time.
    pub wall: Duration,
    /// Turns.
    pub turns: u32,
    /// Tokens.
    pub tokens: u64,
    /// USD.
    pub cost_usd: f64,
}

impl Budget {
    /// The first cap `spent` reached, in words; `None` while every cap has room.
    pub fn exhausted(&self, spent: &Spent) -> Option<String> {
        if let Some(wall) = self.wall
            && spent.wall >= wall
        {
            return Some(format!("wall time {}s reached", wall.as_secs()));
        }
        if let Some(turns) = self.turns
            && spent.turns >= turns
        {
            return Some(format!("{turns} executor turns reached"));
        }
        if let Some(tokens) = self.tokens
            && spent.tokens >= tokens
        {
            return Some(format!("{tokens} tokens reached"));
        }
        if let Some(cost) = self.cost_usd
            && spent.cost_usd >= cost
        {
            return Some(format!("${cost:.2} reached"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cap_is_checked() {
        let budget = Budget {
            wall: Some(Duration::from_secs(60)),
            turns: Some(3),
            tokens: Some(1000),
            cost_usd: Some(0.5),
        };
        assert_eq!(budget.exhausted(&Spent::default()), None);
        let at = |f: fn(&mut Spent)| {
            let mut spent = Spent::default();
            f(&mut spent);
            budget.exhausted(&spent)
        };
        assert!(
            at(|s| s.wall = Duration::from_secs(61))
                .unwrap()
                .contains("wall")
        );
        assert!(at(|s| s.turns = 3).unwrap().contains("turns"));
        assert!(at(|s| s.tokens = 1000).unwrap().contains("tokens"));
        assert!(at(|s| s.cost_usd = 0.51).unwrap().contains("$0.50"));
        assert_eq!(
            Budget::default().exhausted(&Spent {
                turns: 99,
                ..Spent::default()
            }),
            None
        );
    }
}
