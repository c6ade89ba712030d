//! Handoff's tool framework.
//!
//! One declaration per tool ([`Tool`]: typed arguments with a generated schema, a description,
//! a typed output), one [`ToolContext`] per call, and one [`Pipeline`] that every call passes
//! through in a fixed order — resolve, visibility, loop guard, before-hooks, validation,
//! permission, execution (deadline + cancellation), output limits, after-hooks, audit — whatever
//! transport it arrived on. The tools' wire types (arguments, results, error codes, names)
//! live in `handoff-protocol`; this crate holds the behaviour behind them. Nothing here is
//! durable: registries, pipelines and task handles live in memory and read the engine's store.

pub mod builtin;
mod context;
mod declare;
mod error;
mod error_text;
pub mod excerpt;
mod follow_up;
pub mod handles;
pub mod pipeline;
mod registry;
mod schema;
pub mod stages;
pub mod tasks;
mod wording;

pub use context::{NoProgress, ProgressReporter, ResultMeta, TaskObserver, ToolContext};
pub use declare::{Reply, Tool, ToolAnnotations, ToolDefinition};
pub use error::ToolError;
pub use follow_up::{FollowUp, FollowUps, NoFollowUps};
pub use handoff_protocol::{ERROR_META_KEY, SchemaError, ToolErrorBody};
pub use handoff_task::{AgentId, InvalidAgentId};
pub use pipeline::{CallOutcome, CallRequest, Pipeline, PipelineBuilder, ReplyOutcome};
pub use registry::{RegistryError, ToolRegistry};
pub use schema::ValidationFailure;
