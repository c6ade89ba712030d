//! What a task's model calls through Handoff's model gateway took so far, and the one line
//! every surface (tool text, CLI, dashboard) shows it in.

use serde::{Deserialize, Serialize};

/// A task's model calls through the gateway so far, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelUsage {
    /// Calls made.
    pub calls: u64,
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache.
    pub cached_tokens: u64,
    /// Their cost in US dollars, at the server's configured prices.
    pub cost_usd: f64,
}

impl ModelUsage {
    /// Input and output tokens together (what a token budget counts).
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// One line: `3 calls, 1,234 in (200 cached) / 456 out tokens, $0.0123`.
    pub fn summary(&self) -> String {
        let calls = if self.calls == 1 { "call" } else { "calls" };
        let cached = if self.cached_tokens > 0 {
            format!(" ({} cached)", grouped(self.cached_tokens))
        } else {
            String::new()
        };
        format!(
            "{} {calls}, {} in{cached} / {} out tokens, ${:.4}",
            self.calls,
            grouped(self.input_tokens),
            grouped(self.output_tokens),
            self.cost_usd
        )
    }
}

/// `n` with its thousands separated by commas (`1,234,567`).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_groups_thousands_and_names_cached_tokens_only_when_there_are_some() {
        let usage = ModelUsage {
            calls: 3,
            input_tokens: 1_234,
            output_tokens: 456,
            cached_tokens: 200,
            cost_usd: 0.012_3,
        };
        assert_eq!(
            usage.summary(),
            "3 calls, 1,234 in (200 cached) / 456 out tokens, $0.0123"
        );
        assert_eq!(usage.tokens(), 1_690);
        let one = ModelUsage {
            calls: 1,
            input_tokens: 1_000_000,
            output_tokens: 7,
            cached_tokens: 0,
            cost_usd: 2.0,
        };
        assert_eq!(
            one.summary(),
            "1 call, 1,000,000 in / 7 out tokens, $2.0000"
        );
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(12_345), "12,345");
    }
}
