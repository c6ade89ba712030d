//! Plain HTTP endpoints beside MCP, and the one middleware in front of `/mcp`.

mod health;
mod letta_metrics;
mod matrix_metrics;
mod mcp_route;
mod metrics;
mod pool_metrics;

pub(crate) use health::{health, ready};
pub(crate) use letta_metrics::LettaMetrics;
pub(crate) use matrix_metrics::MatrixMetrics;
pub(crate) use mcp_route::{McpRoute, mcp_checks};
pub(crate) use metrics::{McpMetrics, count_request, metrics};
pub(crate) use pool_metrics::PoolMetrics;
