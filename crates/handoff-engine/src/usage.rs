//! What an executor's events say it spent: tokens and cost per model step (`tokens`, `cost`),
//! or a session's running cost (`session_cost`, as ACP agents report it), counted once.

use serde_json::Value;

/// Tokens and US dollars counted from a task's events, in their order.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Usage {
    /// Input and output tokens.
    pub tokens: u64,
    /// Cost in US dollars.
    pub cost_usd: f64,
    /// The last running session cost seen, so the next report adds only what is new.
    session_cost: f64,
}

impl Usage {
    /// Counts one event's data.
    pub(crate) fn add(&mut self, data: &Value) {
        if let Some(t) = data.get("tokens") {
            self.tokens += t["input"].as_u64().unwrap_or(0) + t["output"].as_u64().unwrap_or(0);
        }
        self.cost_usd += data.get("cost").and_then(Value::as_f64).unwrap_or(0.0);
        if let Some(amount) = data.get("session_cost").and_then(usd) {
            // A running total never falls within a session: a lower one is a new session's.
            let new = if amount >= self.session_cost {
                amount - self.session_cost
            } else {
                amount
            };
            self.cost_usd += new;
            self.session_cost = amount;
        }
    }
}

/// The amount of a `{amount, currency}` cost in US dollars; another currency is not counted
/// (there is no rate to convert it by), nor is a negative or non-finite amount.
fn usd(cost: &Value) -> Option<f64> {
    let currency = cost
        .get("currency")
        .and_then(Value::as_str)
        .unwrap_or("USD");
    let amount = cost.get("amount").and_then(Value::as_f64)?;
    (currency.eq_ignore_ascii_case("USD") && amount.is_finite() && amount >= 0.0).then_some(amount)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_running_session_cost_is_counted_once_and_steps_add_up() {
        let mut usage = Usage::default();
        for data in [
            json!({"tokens": {"input": 10, "output": 5}, "cost": 0.25}),
            json!({"used": 100, "session_cost": {"amount": 0.5, "currency": "USD"}}),
            json!({"used": 200, "session_cost": {"amount": 0.75, "currency": "USD"}}),
            // The same total again (a replay, or a report without a new step) adds nothing.
            json!({"used": 200, "session_cost": {"amount": 0.75, "currency": "usd"}}),
        ] {
            usage.add(&data);
        }
        assert_eq!(usage.tokens, 15);
        assert!((usage.cost_usd - 1.0).abs() < 1e-9, "{}", usage.cost_usd);
    }

    #[test]
    fn a_new_session_other_currencies_and_bad_amounts() {
        let mut usage = Usage::default();
        usage.add(&json!({"session_cost": {"amount": 2.0}}));
        // Lower than the last total: a new session, whose total is all new.
        usage.add(&json!({"session_cost": {"amount": 0.5, "currency": "USD"}}));
        assert!((usage.cost_usd - 2.5).abs() < 1e-9, "{}", usage.cost_usd);
        for bad in [
            json!({"session_cost": {"amount": 9.0, "currency": "EUR"}}),
            json!({"session_cost": {"amount": -1.0}}),
            json!({"session_cost": {"amount": "1"}}),
            json!({"session_cost": null}),
        ] {
            usage.add(&bad);
        }
        assert!((usage.cost_usd - 2.5).abs() < 1e-9, "{}", usage.cost_usd);
    }
}
