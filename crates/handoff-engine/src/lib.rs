//! The task engine: the one place tasks change. It accepts submissions (limits, rate,
//! idempotency), dispatches queued tasks to executors within the concurrency limits, supervises
//! each run (events, artifacts, deadline), applies controls and messages, answers queries with
//! ownership checks, and reconciles the store after a restart.

mod approvals;
mod artifacts;
mod control;
mod engine;
mod error;
mod evaluate;
mod files;
mod input;
mod letta;
mod metrics;
mod policy;
mod query;
mod rate;
mod recovery;
mod retention;
mod run;
mod scheduler;
mod snapshot;
mod submit;
mod workdir;
mod worktree;

pub use approvals::MAX_AUDIT_PAGE;
pub use control::{Control, ControlReceipt, MessageReceipt};
pub use engine::Engine;
pub use error::EngineError;
pub use files::{FileChunk, FileEntry, FileKind, FileListing};
pub use metrics::EngineMetrics;
pub use query::{History, StatusView};
pub use submit::{SubmitRequest, Submitted};
