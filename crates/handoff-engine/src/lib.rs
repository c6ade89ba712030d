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
mod finish;
mod follow;
mod lifecycle;
mod metrics;
mod outbox;
mod policy;
mod query;
mod rate;
mod recovery;
mod retention;
mod scheduler;
mod snapshot;
mod state;
mod submit;
mod supervisor;
mod workdir;
mod worktree;

pub use approvals::MAX_AUDIT_PAGE;
pub use control::{Control, ControlReceipt, MessageReceipt};
pub use engine::Engine;
pub use error::EngineError;
pub use files::{FileChunk, FileEntry, FileKind, FileListing};
pub use metrics::EngineMetrics;
pub use outbox::{Integration, TaskNotice};
pub use query::{History, Overview, StatusView};
pub use submit::{SubmitRequest, Submitted};
pub use supervisor::{CommandReply, TaskCommand, TaskCommands};
