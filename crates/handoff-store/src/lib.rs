//! Durable task storage. The engine talks only to the [`Store`] trait; [`SqliteStore`] is the
//! embedded implementation (one file under the data dir, WAL mode). Every rule that must hold
//! under concurrency — capacity, idempotency, slot claiming, compare-and-set of states — is
//! enforced inside one store transaction, so a second implementation (PostgreSQL) can keep the
//! same guarantees across several Handoff instances.

mod error;
mod sqlite;
mod store;

pub use error::StoreError;
pub use sqlite::SqliteStore;
pub use store::{
    AuditFilter, ClaimLimits, IdempotencyClaim, InsertOutcome, NewArtifact, StatusChange, Store,
    TaskFilter, TaskPage,
};
