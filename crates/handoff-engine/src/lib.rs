//! The task engine: the one place tasks change. It accepts submissions (limits, rate,
//! idempotency), dispatches queued tasks to executors within the concurrency limits, supervises
//! each run (events, artifacts, deadline), applies controls and messages, answers queries with
//! ownership checks, and reconciles the store after a restart.
//!
//! Concurrency model. Durable: every task, event, artifact, approval, audit record and every
//! request waiting for an answer lives in the store, written before anything is published — a
//! restarted process (or, later, another instance) finds all of it there. In memory: one
//! supervisor actor per run in this process (`supervisor`) owns the run's live state — the
//! executor's control handle and capabilities, Handoff's stop decision, the pending requests'
//! ask timers — and is reached only through its mailbox: by the run's driver (`lifecycle`,
//! `follow`, `evaluate`) through a link, and by everyone else through the [`TaskCommands`]
//! seam; what the driver only reads (the stop decided) the supervisor publishes to it. The
//! registry holds only mailboxes. What a run is held to (`plan`: its completion settings,
//! deadline, executor) is decided once when it starts, from the task and the configuration, and
//! handed to its supervisor and its driver (`driver`). Every event and state change goes out
//! once through the outbox (`outbox`): a broadcast for in-process followers and direct calls to
//! the [`Integration`] plug-ins. Modules depend one way: `engine` (start-up) → `scheduler` /
//! `recovery` (and `rescuer` above it) → `lifecycle` → `evaluate` → `follow` → `meter` /
//! `finish`, with `membership` (register, beat, drain, leave) → `fence` (self-fencing) and
//! `peers` (the other instances) beside them, and `gateway` (who may call a model through the
//! model gateway, what each call cost; its data in the leaf `gateway_state`, a task's totals
//! in `gateway_usage`); all of them work over `state` (the shared
//! handles, the registry of mailboxes, the peers' wake-ups) and `plan`, which only reads the
//! task and the configuration. `state` sits on `supervisor` and `shared`. A supervisor holds
//! only `shared` (store, outbox, settings) and its run's plan, never the registry, so no
//! supervisor can reach another's run. The data the state keeps — who this instance is
//! (`instance`) and its lease clock (`lease_clock`), the peers' wake-ups (`peer_wakes`), the
//! open result waits (`result_waits`) — sits in leaf modules that import nothing of the layers
//! above; handoff-config's `tests/module_cycles.rs` fails on any import circle.

mod approvals;
mod artifacts;
mod branch;
mod control;
mod delivery;
mod driver;
mod engine;
mod error;
mod evaluate;
mod fence;
mod files;
mod finish;
mod follow;
mod follow_up;
mod gateway;
mod gateway_rate;
mod gateway_slots;
mod gateway_state;
mod gateway_usage;
mod git_process;
mod instance;
mod lease_clock;
mod lifecycle;
mod membership;
mod meter;
mod metrics;
mod outbox;
mod output;
mod peer_wakes;
mod peers;
mod plan;
mod policy;
mod pooled;
mod query;
mod rate;
mod recovery;
mod rescuer;
mod result_wait;
mod result_waits;
mod retention;
mod scheduler;
mod shared;
mod snapshot;
mod state;
mod submit;
mod supervisor;
mod usage;
mod workdir;
mod worktree;

pub use approvals::MAX_AUDIT_PAGE;
pub use control::{ControlReceipt, MessageReceipt};
pub use engine::Engine;
pub use error::EngineError;
pub use files::{FileChunk, FileEntry, FileKind, FileListing};
pub use gateway::{GatewayRefusal, ModelCall};
pub use gateway_state::GatewayAccess;
pub use handoff_task::ModelUsage;
pub use metrics::EngineMetrics;
pub use outbox::{Integration, Missed, TaskSubscription};
pub use query::{CLOSING_EVENTS, History, Overview, StatusView};
pub use result_wait::ResultWait;
pub use submit::{SubmitRequest, Submitted};
pub use supervisor::{CommandReply, TaskCommands};
