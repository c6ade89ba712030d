//! What a model's tokens cost: `models.prices` (per model), else the provider's flat
//! `models.price_*_per_mtok`, else a built-in table of common models' list prices, else
//! nothing (tokens are still counted).

use serde::Deserialize;

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input tokens.
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
    /// Per million input tokens read from the provider's cache (unset: the input price).
    #[serde(default)]
    pub cached: Option<f64>,
}

impl Price {
    /// A provider's flat price from its `price_*_per_mtok` settings: none unless the input or
    /// output price is set (an unset one of the two is 0).
    pub fn flat(input: Option<f64>, output: Option<f64>, cached: Option<f64>) -> Option<Price> {
        (input.is_some() || output.is_some()).then(|| Price {
            input: input.unwrap_or(0.0),
            output: output.unwrap_or(0.0),
            cached,
        })
    }

    /// What `input` tokens (of which `cached` read from the provider's cache) and `output`
    /// tokens cost. Agents that resend their conversation read most of it from the cache, at a
    /// tenth to a half of the input price: pricing those as input would overstate the cost.
    pub fn cost(&self, input: u64, output: u64, cached: u64) -> f64 {
        let cached = cached.min(input);
        let fresh = (input - cached) as f64 * self.input;
        let read = cached as f64 * self.cached.unwrap_or(self.input);
        (fresh + read + output as f64 * self.output) / 1_000_000.0
    }
}

/// A call's tokens, as a price is applied to them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallTokens {
    /// Input tokens, cached ones included.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the provider's cache.
    pub cached: u64,
}

/// Prices by model name; a name also prices the models it is a prefix of (`claude-sonnet-4`
/// prices `claude-sonnet-4-20250514`), the longest such name winning.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    entries: Vec<(String, Price)>,
}

/// List prices of common models (USD per million input, output and cached input tokens, as
/// their providers published them in 2025): what a call costs when nothing configured says
/// otherwise.
const DEFAULTS: &[(&str, f64, f64, f64)] = &[
    ("gpt-4.1", 2.0, 8.0, 0.5),
    ("gpt-4.1-mini", 0.4, 1.6, 0.1),
    ("gpt-4.1-nano", 0.1, 0.4, 0.025),
    ("gpt-4o", 2.5, 10.0, 1.25),
    ("gpt-4o-mini", 0.15, 0.6, 0.075),
    ("gpt-5", 1.25, 10.0, 0.125),
    ("gpt-5-mini", 0.25, 2.0, 0.025),
    ("gpt-5-nano", 0.05, 0.4, 0.005),
    ("o3", 2.0, 8.0, 0.5),
    ("o4-mini", 1.1, 4.4, 0.275),
    ("claude-opus-4", 15.0, 75.0, 1.5),
    ("claude-sonnet-4", 3.0, 15.0, 0.3),
    ("claude-3-7-sonnet", 3.0, 15.0, 0.3),
    ("claude-3-5-haiku", 0.8, 4.0, 0.08),
    ("claude-haiku-4-5", 1.0, 5.0, 0.1),
];

impl PriceTable {
    /// The table `models.prices` gives: a JSON object of model → `{"input": …, "output": …}`.
    pub fn parse(json: &str) -> Result<PriceTable, String> {
        let map: std::collections::BTreeMap<String, Price> =
            serde_json::from_str(json).map_err(|e| {
                format!("expected {{\"model\": {{\"input\": 2.0, \"output\": 8.0, \"cached\"?: 0.5}}}}: {e}")
            })?;
        for (model, price) in &map {
            let fine = |v: f64| v.is_finite() && v >= 0.0;
            let cached = price.cached.is_none_or(fine);
            if model.trim().is_empty() || !fine(price.input) || !fine(price.output) || !cached {
                return Err(
                    "every model needs a name and prices that are numbers of 0 or more".to_owned(),
                );
            }
        }
        Ok(PriceTable {
            entries: map.into_iter().collect(),
        })
    }

    /// The built-in list prices.
    pub fn defaults() -> PriceTable {
        PriceTable {
            entries: DEFAULTS
                .iter()
                .map(|(m, i, o, c)| {
                    let price = Price {
                        input: *i,
                        output: *o,
                        cached: Some(*c),
                    };
                    ((*m).to_owned(), price)
                })
                .collect(),
        }
    }

    /// The price of `model` (a provider prefix such as `openai/` is ignored).
    pub fn find(&self, model: &str) -> Option<Price> {
        let model = model.rsplit('/').next().unwrap_or(model);
        self.entries
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| *price)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_name_a_model_starts_with_prices_it() {
        let table = PriceTable::defaults();
        assert_eq!(table.find("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(table.find("gpt-4o-2024-08-06").unwrap().input, 2.5);
        assert_eq!(table.find("openai/gpt-4.1").unwrap().output, 8.0);
        assert_eq!(table.find("claude-sonnet-4-20250514").unwrap().output, 15.0);
        assert_eq!(table.find("qwen2.5-coder:14b"), None);
    }

    #[test]
    fn a_configured_table_is_checked() {
        let table = PriceTable::parse(r#"{"local": {"input": 0, "output": 0.5}}"#).unwrap();
        assert_eq!(table.find("local-7b").unwrap().cost(0, 2_000_000, 0), 1.0);
        let cached =
            PriceTable::parse(r#"{"m": {"input": 2, "output": 0, "cached": 0.5}}"#).unwrap();
        // 1M input of which 0.6M cached: 0.4M at 2 + 0.6M at 0.5.
        let cost = cached.find("m").unwrap().cost(1_000_000, 0, 600_000);
        assert!((cost - 1.1).abs() < 1e-12, "{cost}");
        let sonnet = PriceTable::defaults().find("claude-sonnet-4-5").unwrap();
        assert!((sonnet.cost(1_000_000, 0, 1_000_000) - 0.3).abs() < 1e-12);
        for bad in [
            r#"{"m": {"input": -1, "output": 1}}"#,
            r#"{"m": {"input": 1}}"#,
            r#"{"m": {"input": 1, "output": 1, "cached": -1}}"#,
            r#"{"m": {"input": 1, "output": 1, "written": 1}}"#,
            r#"["m"]"#,
            r#"{"": {"input": 1, "output": 1}}"#,
        ] {
            assert!(PriceTable::parse(bad).is_err(), "{bad}");
        }
    }
}
