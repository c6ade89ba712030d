//! Handoff's transports: MCP over Streamable HTTP at `/mcp` (legacy sessions and 2026-07-28
//! stateless requests on one endpoint) and over stdio, with security at the edge and plain
//! HTTP health endpoints and the live web dashboard at `/`.
#![deny(clippy::print_stdout)]

mod agent_homes;
mod app;
mod call_id;
mod conn;
mod dashboard;
pub mod doctor;
pub mod edge;
mod executors;
mod gateway;
mod headers;
mod http;
mod integrations;
pub mod isolation;
mod lock;
mod mcp;
mod opencode_gateway;
mod program;
mod serve;
mod stdio;
mod store;
mod store_health;
#[cfg(test)]
mod test_config;

pub use app::{App, AppError};
pub use lock::{DataDirLock, LOCK_FILE, LockError};
pub use mcp::HandoffMcp;
pub use serve::{ServeError, ServerHandle, router, serve_http, serve_stdio};
