//! Durable task storage, split by reason to change: [`TaskStore`] (tasks, events, artifacts,
//! open input requests), [`ApprovalStore`] (standing approvals, audit) and per-integration
//! records ([`WorkspaceStore`] for Letta, [`ChannelStore`] for chat integrations such as
//! Matrix). The engine talks only to [`Store`]; [`SqliteStore`] is the embedded implementation
//! (one file under the data dir, WAL mode), [`PgStore`] the PostgreSQL one for several
//! instances sharing a database.
//!
//! One store, two dialects: every operation is written once (`ops`, over the `sql::Conn`
//! driver interface) and every store trait implemented once (`impls`, over a `backend`); each
//! dialect keeps only what differs — its connections, transactions and locks, and the few
//! statements written differently (`sqlite`, `postgres`). Every rule that must hold under
//! concurrency — capacity, idempotency, slot claiming, compare-and-set of states, fencing — is
//! enforced inside one store transaction, so the guarantees hold across several instances
//! (PostgreSQL serializes only what each check reads: `postgres::locks`). A lease takeover is
//! one compare-and-set that still finds the lease expired ([`InstanceStore::take_over`]); why
//! that keeps two runs of one task from overlapping is the engine's `fence` module.
//!
//! In memory live only: the leases this handle holds (which fence its writes), whether writes
//! currently fail and whether the database answers (for readiness checks), the wake-ups of
//! other instances, and open connections (SQLite's small reads run on the calling thread
//! through connections of their own).

mod backend;
mod commands;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod error;
mod fence;
mod impls;
mod instances;
mod ops;
mod postgres;
mod repeats;
mod rows;
mod sql;
mod sqlite;
mod store;

pub use error::StoreError;
pub use postgres::{PgStore, SessionLimits};
pub use sqlite::SqliteStore;
pub use store::{
    ApprovalStore, AuditFilter, ChannelRecord, ChannelStore, ClaimLimits, IdempotencyClaim,
    InsertOutcome, InstanceRecord, InstanceStore, InstanceSummary, LeaseGrant, NewArtifact,
    PeerStore, PostedCommand, Reopen, StatusChange, Store, StoreSignal, TaskFilter, TaskPage,
    TaskStore, WorkspaceBacklog, WorkspaceStore,
};
