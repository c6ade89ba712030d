//! Durable task storage, split by reason to change: [`TaskStore`] (tasks, events, artifacts,
//! open input requests), [`ApprovalStore`] (standing approvals, audit) and per-integration
//! records ([`WorkspaceStore`] for Letta, [`ChannelStore`] for chat integrations such as Matrix). The engine talks only to [`Store`] (the first two); [`SqliteStore`] is the
//! embedded implementation (one file under the data dir, WAL mode), [`PgStore`] the PostgreSQL
//! one for several instances sharing a database. Every rule that must hold
//! under concurrency — capacity, idempotency, slot claiming, compare-and-set of states — is
//! enforced inside one store transaction, so a second implementation (PostgreSQL) can keep the
//! same guarantees across several Handoff instances. In memory live only whether writes
//! currently fail ([`SqliteStore::write_fault`]), for readiness checks, and open connections
//! (SQLite's small reads run on the calling thread through connections of their own).

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
    PeerStore, PostedCommand, StatusChange, Store, StoreSignal, TaskFilter, TaskPage, TaskStore,
    WorkspaceBacklog, WorkspaceStore,
};
