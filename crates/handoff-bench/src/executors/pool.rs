//! Waiting for an executor's pool of started agents to be full again, as `/metrics` says, so
//! every pooled task finds an agent waiting (the pool refills in the background after a claim).

use std::time::Duration;

use reqwest::Client;

use crate::BenchError;

/// How long a pool may take to fill (a first start creates the agent's database).
const FILL_LIMIT: Duration = Duration::from_secs(60);

/// The series that counts an executor's agents waiting in its pool.
const SERIES: &str = "handoff_executor_pool_ready";

/// The value of `handoff_executor_pool_ready{executor="<executor>"}` in a `/metrics` text, if
/// the series is there.
pub(super) fn pool_ready(metrics: &str, executor: &str) -> Option<f64> {
    crate::metrics::value(metrics, &format!("{SERIES}{{executor=\"{executor}\"}}"))
}

/// Polls `metrics_url` until `executor`'s pool holds `size` agents; fails after 60 s, saying
/// whether the series was missing or what it said last.
pub(super) async fn wait_full(
    http: &Client,
    metrics_url: &str,
    executor: &str,
    size: usize,
) -> Result<(), BenchError> {
    let deadline = tokio::time::Instant::now() + FILL_LIMIT;
    let mut last = None;
    loop {
        if let Ok(answer) = http.get(metrics_url).send().await
            && let Ok(text) = answer.text().await
        {
            last = pool_ready(&text, executor).or(last);
            if last.is_some_and(|ready| ready >= size as f64) {
                return Ok(());
            }
        }
        if tokio::time::Instant::now() > deadline {
            return Err(not_full(executor, size, last));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn not_full(executor: &str, size: usize, last: Option<f64>) -> BenchError {
    let series = format!("{SERIES}{{executor=\"{executor}\"}}");
    BenchError::Setup(match last {
        None => format!(
            "{executor}'s pool: /metrics had no `{series}` line within {} s (does this build \
             keep a pool? HANDOFF_OPENCODE_POOL)",
            FILL_LIMIT.as_secs()
        ),
        Some(ready) => format!(
            "{executor}'s pool not full within {} s: `{series} {ready}`, {size} wanted",
            FILL_LIMIT.as_secs()
        ),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const METRICS: &str = "# HELP handoff_executor_pool_ready Agents started ahead of tasks.\n\
        # TYPE handoff_executor_pool_ready gauge\n\
        handoff_executor_pool_ready{executor=\"opencode-acp\"} 1\n\
        handoff_executor_pool_ready{executor=\"codex-acp\"} 0\n\
        handoff_tasks_total{status=\"completed\"} 12\n";

    #[test]
    fn reads_the_executors_own_line() {
        assert_eq!(pool_ready(METRICS, "opencode-acp"), Some(1.0));
        assert_eq!(pool_ready(METRICS, "codex-acp"), Some(0.0));
        assert_eq!(pool_ready(METRICS, "opencode"), None);
        assert_eq!(pool_ready("", "opencode-acp"), None);
    }

    #[test]
    fn an_empty_pool_and_a_float_value_read_as_numbers() {
        let text = "handoff_executor_pool_ready{executor=\"opencode-acp\"} 0\n";
        assert_eq!(pool_ready(text, "opencode-acp"), Some(0.0));
        let text = "handoff_executor_pool_ready{executor=\"opencode-acp\"}   1.0\r\n";
        assert_eq!(pool_ready(text, "opencode-acp"), Some(1.0));
        let text = "handoff_executor_pool_ready_total{executor=\"opencode-acp\"} 5\n";
        assert_eq!(pool_ready(text, "opencode-acp"), None);
    }

    #[test]
    fn the_timeout_says_whether_the_series_was_there() {
        let missing = not_full("opencode-acp", 1, None).to_string();
        assert!(
            missing.contains("no `handoff_executor_pool_ready{executor=\"opencode-acp\"}` line"),
            "{missing}"
        );
        let short = not_full("opencode-acp", 1, Some(0.0)).to_string();
        assert!(
            short.contains("not full within 60 s") && short.contains("} 0`"),
            "{short}"
        );
    }
}
