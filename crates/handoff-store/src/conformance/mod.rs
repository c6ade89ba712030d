//! The behaviour every store must show, written once against the store traits so each
//! implementation runs the same cases: capacity, idempotency, claim order and limits,
//! compare-and-set, event numbering, purging, input requests, approvals, audit, workspaces, chat
//! channels and commands between instances.
//!
//! Each case is a `pub async fn case<S: ConformanceStore>(store: S)` that panics on a broken
//! promise. [`store_conformance!`](crate::store_conformance) turns the whole list into one
//! `#[tokio::test]` per case, so a store only supplies a way to open a fresh one.
//!
//! # Running the suite for a new store
//!
//! 1. In the crate holding the store's tests, depend on this crate with the `conformance`
//!    feature (`handoff-store = { workspace = true, features = ["conformance"] }` under
//!    `[dev-dependencies]`) and on `tokio` with `macros` and `rt-multi-thread`. Inside
//!    handoff-store itself nothing is needed: the module is built for its own tests.
//! 2. Write an async opener returning `(store, guard)`: a fresh, empty store (no tasks,
//!    approvals, audit or workspace records — cases count rows) and whatever must outlive the
//!    test (a temporary directory, a throw-away database or schema; `()` if nothing). Clones of
//!    the store must share its data, as a connection pool does.
//! 3. Invoke the macro in a test module; it expands to test functions named after the cases:
//!
//! ```text
//! #[cfg(test)]
//! mod conformance {
//!     async fn open() -> (PgStore, TestDatabase) {
//!         let db = TestDatabase::create().await;
//!         (PgStore::connect(db.url(), limits).await.unwrap(), db)
//!     }
//!
//!     handoff_store::store_conformance!(open);
//! }
//! ```
//!
//! The opener may be any expression callable with no arguments, e.g. `|| async { … }`; within
//! this crate write `crate::store_conformance!(open)`. The store is dropped before the guard.
//! To run the suite only where a server is available, put the invocation in a module gated by
//! `#[cfg(...)]` (a feature or `--cfg`).
//! Tests that depend on one implementation's internals (files, pools, raw rows) stay with it.

// Test code built into the library when another crate enables `conformance`: a failed step
// must fail the test on the spot, with the location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod approvals;
pub mod channels;
pub mod claims;
pub mod events;
pub mod inputs;
pub mod inserts;
pub mod leases;
pub mod peers;
pub mod purge;
pub mod states;
pub(crate) mod support;
pub mod tasks;
pub mod workspaces;

use crate::{ApprovalStore, ChannelStore, InstanceStore, PeerStore, TaskStore, WorkspaceStore};

/// What a store implements to run the suite (clones share the same data and leases).
pub trait ConformanceStore:
    TaskStore + ApprovalStore + InstanceStore + PeerStore + WorkspaceStore + ChannelStore + Clone
{
    /// A handle on the same data acting as another instance: it holds its own leases, so its
    /// writes and this one's are fenced separately.
    fn another_instance(&self) -> Self;
}

impl ConformanceStore for crate::SqliteStore {
    fn another_instance(&self) -> Self {
        crate::SqliteStore::another_instance(self)
    }
}

impl ConformanceStore for crate::PgStore {
    fn another_instance(&self) -> Self {
        crate::PgStore::another_instance(self)
    }
}

/// Expands to one `#[tokio::test]` per conformance case, each on a store from `$open`.
#[macro_export]
macro_rules! store_conformance {
    ($open:expr $(,)?) => {
        $crate::store_conformance!(@current_thread $open;
            tasks::insert_and_get_round_trip_every_field,
            tasks::list_tasks_filters_and_pages,
            tasks::list_tasks_filters_by_description_text,
            tasks::queue_positions_counts_and_recovery_lists,
            tasks::the_first_result_delivery_is_kept,
            inserts::idempotency_keys_are_per_agent_and_expire,
            inserts::full_queue_refuses_without_capturing_the_key,
            inserts::the_repeat_guard_counts_unfinished_identical_submissions,
            claims::claims_prefer_priority,
            claims::claims_skip_agents_at_their_limit,
            states::set_status_is_compare_and_set,
            states::requeue_returns_active_tasks_to_the_queue_only,
            states::reopen_starts_a_follow_up_round_of_a_finished_task_only,
            events::artifacts_are_upserted_per_kind,
            purge::purge_removes_only_old_terminal_tasks_with_their_rows,
            purge::purge_takes_task_approvals_and_old_audit,
            inputs::input_requests_are_kept_in_order_and_go_with_the_run,
            approvals::approvals_reach_their_task_or_project_and_revoke_per_agent,
            approvals::audit_reads_newest_first_per_agent_and_task,
            approvals::a_huge_audit_record_is_stored_as_a_bounded_row,
            workspaces::records_round_trip_and_insert_keeps_the_first,
            workspaces::due_records_are_the_ones_with_work,
            workspaces::the_backlog_counts_each_kind_of_work_owed,
            channels::channels_round_trip_and_close,
            channels::cursors_are_replaced_and_commands_applied_once,
            leases::instances_beat_and_renew_their_own_leases,
            leases::a_stale_token_is_refused_and_changes_nothing,
            leases::a_task_failed_elsewhere_fences_its_old_owner,
            leases::rates_hold_across_instances,
            leases::the_call_history_is_shared_and_forgets,
            leases::a_successor_takes_its_predecessors_leases_over,
            leases::a_takeover_needs_an_expired_lease_and_beats_a_late_renewal,
            peers::commands_are_taken_once_and_answered_once,
            peers::commands_are_withdrawn_or_taken_never_both,
            peers::the_instance_that_ran_a_task_is_kept,
        );
        // Races need real parallelism to mean anything.
        $crate::store_conformance!(@multi_thread $open;
            inserts::concurrent_inserts_respect_capacity_and_keys,
            claims::concurrent_claims_are_exact_and_fifo,
            claims::concurrent_claims_respect_the_per_agent_limit,
            events::appended_events_are_numbered_contiguously,
        );
    };
    (@current_thread $open:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[::tokio::test]
            async fn $case() {
                let (store, _guard) = ($open)().await;
                $crate::conformance::$module::$case(store).await;
            }
        )*
    };
    (@multi_thread $open:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let (store, _guard) = ($open)().await;
                $crate::conformance::$module::$case(store).await;
            }
        )*
    };
}
