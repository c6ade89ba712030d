//! MCP protocol wiring: rmcp's handler trait on top of Handoff's tool pipeline.

mod convert;
mod elicit;
mod handler;
mod progress;
mod relay;
mod tasks;

pub use handler::HandoffMcp;
pub(crate) use relay::ElicitationRelay;
