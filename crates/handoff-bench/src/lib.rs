//! `handoff bench`: a load generator that speaks MCP Streamable HTTP (legacy sessions and
//! 2026-07-28 stateless requests) against a real `handoff serve` process, and the same load
//! against a floor server with no MCP machinery, so every figure comes with its ratio to the
//! floor measured in the same run — single requests, and whole units in a fresh session as Letta
//! and connecting clients send them. Also: cold start, a soak at a fixed rate, and memory after
//! abandoned sessions. With `--executors`: the time Handoff adds to real coding agents. With
//! `--instances`: several instances on one PostgreSQL against one on SQLite. With `--gateway`:
//! what the model gateway adds to a streamed model call against calling the provider directly.

mod client;
mod error;
mod executors;
mod floor;
mod gateway;
mod load;
mod measure;
mod metrics;
mod ops;
mod pattern;
mod pattern_step;
mod proc;
mod report;
mod run;
mod scale;
mod soak;
mod target;

pub use error::BenchError;
pub use executors::{ExecutorBenchOptions, run_executors};
pub use floor::serve_floor;
pub use gateway::{GatewayBenchOptions, run_gateway};
pub use run::{BenchOptions, run};
pub use scale::{ScaleBenchOptions, run_scale};
