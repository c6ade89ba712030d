//! Handoff's Letta integration. Each task of a Letta agent gets a workspace memory block in
//! that agent's core memory (label `handoff_task_<id>`), kept small — never over its limit — and
//! true — written at most once per interval however fast events arrive, at once on a status
//! change, and finally with the end state; the block is detached after a delay and deleted
//! after a retention period, both stored so they survive restarts. When the task ends the agent
//! gets exactly one short message (unless it opted out, or its final result already came back in
//! its sync call). Every call to Letta is bounded: a timeout, retries with back-off, and
//! process-wide limits on concurrency and rate. What it does is counted through a [`SyncMeter`]
//! the composition root supplies.
//! [`connect`] registers Handoff with a Letta server and attaches its tools to agents
//! (`handoff letta connect`).

mod block;
mod client;
pub mod connect;
mod error;
#[cfg(test)]
mod fixtures;
mod meter;
mod notice;
mod sync;
#[cfg(feature = "test-support")]
pub mod testing;

pub use block::{BLOCK_DESCRIPTION, WorkspaceValue, fit_value};
pub use client::{
    AgentSecret, Backoff, Block, Health, LettaAgent, LettaClient, LettaTool, McpServer, NewBlock,
    NewMessage, NewTool, Run,
};
pub use error::LettaError;
pub use meter::{NoMeter, SyncMeter};
pub use notice::{Notice, notice_otid};
pub use sync::{Owed, WorkspaceSync};
