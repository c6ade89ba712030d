//! Plain HTTP endpoints beside MCP.

mod health;
mod metrics;

pub(crate) use health::{health, ready};
pub(crate) use metrics::{McpMetrics, count_requests, metrics};
