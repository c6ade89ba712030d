//! MCP protocol wiring: rmcp's handler trait on top of Handoff's tool pipeline.

mod convert;
mod handler;
mod progress;

pub use handler::HandoffMcp;
