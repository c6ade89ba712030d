//! Reading a `handoff serve`'s `/metrics` (Prometheus text).

/// `/metrics` of the server whose MCP endpoint is `mcp_url`.
pub(crate) fn url(mcp_url: &str) -> String {
    let base = mcp_url.strip_suffix("/mcp").unwrap_or(mcp_url);
    format!("{}/metrics", base.trim_end_matches('/'))
}

/// The value of the sample named exactly `series` (name and labels, as printed) in a
/// `/metrics` text, if it is there.
pub(crate) fn value(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.trim().rsplit_once(char::is_whitespace))
        .find(|(name, _)| name.trim_end() == series)
        .and_then(|(_, value)| value.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_sits_beside_mcp() {
        assert_eq!(
            url("http://127.0.0.1:4100/mcp"),
            "http://127.0.0.1:4100/metrics"
        );
        assert_eq!(
            url("http://127.0.0.1:4100/"),
            "http://127.0.0.1:4100/metrics"
        );
    }

    #[test]
    fn a_series_is_matched_whole() {
        let text = "# TYPE handoff_gateway_calls_total counter\n\
            handoff_gateway_calls_total{wire=\"openai_chat\",status=\"2xx\"} 42\n\
            handoff_gateway_calls_total{wire=\"openai_chat\",status=\"4xx\"} 1\n";
        let ok = "handoff_gateway_calls_total{wire=\"openai_chat\",status=\"2xx\"}";
        assert_eq!(value(text, ok), Some(42.0));
        assert_eq!(value(text, "handoff_gateway_calls_total"), None);
    }
}
