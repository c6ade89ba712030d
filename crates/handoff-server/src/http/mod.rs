//! Plain HTTP endpoints beside MCP.

mod health;
mod letta_metrics;
mod metrics;

pub(crate) use health::{health, ready};
pub(crate) use letta_metrics::LettaMetrics;
pub(crate) use metrics::{McpMetrics, count_requests, metrics};
