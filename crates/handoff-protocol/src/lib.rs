//! Handoff's wire contract, with no engine behind it: what a client (the CLI, the web
//! dashboard, a test) needs to call Handoff's MCP tools and read their answers.
//!
//! - [`names`]: every tool's name; [`ToolCall`] ties an argument type to its tool name and
//!   result type.
//! - [`tasks`] and [`builtin`]: each tool's arguments and structured result, with the JSON
//!   schemas the server publishes ([`object_schema_for`] produces them identically).
//! - [`TaskView`], [`EventView`]: tasks and events as the tools show them.
//! - [`TaskCommand`] and [`TaskNotice`]: what is asked of a running task and what happened to
//!   one, the same values in process and between instances sharing a store.
//! - [`codes`] and [`ToolErrorBody`]: failed tool calls (in an error result's `_meta`); [`jsonrpc`]: protocol errors;
//!   [`headers`]: what a client may send besides the body.
//! - The task domain's wire types ([`TaskStatus`] and its names, [`TaskId`], [`AgentId`] …),
//!   re-exported from `handoff-task` so a client needs this crate only.
//!
//! Everything here is plain data: nothing is stored and nothing is kept in memory.

pub mod builtin;
mod call;
pub mod codes;
mod command;
mod error_body;
pub mod headers;
pub mod jsonrpc;
pub mod names;
mod notice;
mod schema;
pub mod tasks;
mod views;

pub use call::ToolCall;
pub use command::TaskCommand;
pub use error_body::{ERROR_META_KEY, ToolErrorBody, ToolErrorMeta};
pub use handoff_task::diff_stat;
pub use handoff_task::{
    AgentId, Approval, ApprovalScope, ArtifactKind, AuditRecord, CompletionBudget,
    CompletionPolicy, CompletionSpec, EventKind, EventLines, ExitInfo, FileStat, InvalidAgentId,
    InvalidTaskId, MessageType, ObserverId, TaskId, TaskStatus,
};
pub use notice::TaskNotice;
pub use schema::{SchemaError, object_schema_for};
pub use views::{DESCRIPTION_CHARS, EVENT_MESSAGE_CHARS, EventView, TaskView, clip};

#[cfg(test)]
mod roundtrip_tests;
#[cfg(test)]
mod schema_tests;
