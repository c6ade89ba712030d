//! MCP protocol wiring: rmcp's handler trait on top of Handoff's tool pipeline.

mod answer;
mod call;
mod convert;
mod direct;
mod elicit;
mod handler;
mod lists;
mod priming;
mod progress;
mod relay;
mod service;
mod session_gate;
mod sessions;
mod tasks;

pub(crate) use call::CallSite;
pub(crate) use direct::DirectAnswers;
pub use handler::HandoffMcp;
pub(crate) use relay::ElicitationRelay;
pub(crate) use service::SharedMcpService;
pub(crate) use session_gate::{session_gate, stateless_initialize, unless_foreign};
pub(crate) use sessions::{CappedSessions, SessionLimits, SessionMetrics};
