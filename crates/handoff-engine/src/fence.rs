//! Self-fencing: an instance stops its own runs before anyone else may take their tasks over.
//!
//! The timing argument. Every lease this instance holds ends no earlier than the `until` of
//! its last heartbeat the store confirmed (or its registration): a beat computes
//! `until = now + lease_expiry` before it is sent, and every claim made since got a later one.
//! The [`guard`] freezes every run of the instance once its own clock passes
//! `until − margin` (`margin` = a fifth of the lease expiry) without a newer confirmation —
//! whether the database is down, the network cut, or the beats merely late. Another instance
//! takes a task over only once its own clock passes `lease_until + clock_skew`, and only by a
//! compare-and-set that still finds the lease expired ([`handoff_store::InstanceStore::take_over`]).
//! With the two clocks at most `clock_skew` apart, the taker acts after the holder's clock
//! passed `until`, so after the holder froze its runs, `margin` earlier: two runs of one task
//! are never alive at once. While the holder's process itself is stopped (SIGSTOP, a VM
//! pause) nothing inside it can act; the run keeper process, armed with the same deadline,
//! freezes the runs from outside.
//!
//! A frozen run is thawed when the instance re-wins the same lease with the same fencing
//! token — a later beat renewed it before anyone took the task over — and killed otherwise,
//! without writing anything about it (the new owner decides). Only a shared store (PostgreSQL)
//! fences: a single instance has nobody to yield to, and an unwritable SQLite file must not
//! freeze its runs.
//!
//! In memory only, in the instance's [`LeaseClock`](crate::lease_clock::LeaseClock): the
//! confirmed `until`, whether the runs are frozen, and since when the store answered without a
//! break (the rescuer judges its peers only by that time).

use std::{sync::Arc, time::Duration};

use handoff_runner::fence::FenceDeadline;
use handoff_task::unix_millis_now;

use crate::{
    instance::millis,
    lease_clock::{FenceState, LeaseNotice},
    state::EngineState,
};

/// How long before a lease runs out the runs are frozen: the time the freeze has to land.
pub(crate) fn margin(inner: &EngineState) -> i64 {
    millis(inner.config.instance.lease_expiry) / 5
}

/// The store confirmed this instance's leases until `until`: moves the clock on and, when
/// the runs were frozen, lets each run check whether its task is still its own.
pub(crate) async fn confirmed(inner: &EngineState, until: i64) {
    {
        let mut since = inner.instance.clock.reachable();
        since.get_or_insert_with(unix_millis_now);
    }
    if !inner.store.is_shared() {
        return;
    }
    let mut state = inner.instance.clock.state.lock().await;
    // Confirmed too late to count: the runs stay frozen and the guard's deadline stands.
    if unix_millis_now() >= until.saturating_sub(margin(inner)) {
        return;
    }
    inner.instance.clock.until.send_replace(until);
    if let Some(keeper) = inner.run_fence.get() {
        let left = until
            .saturating_sub(margin(inner))
            .saturating_sub(unix_millis_now());
        let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
        if let Err(e) = keeper.arm(FenceDeadline::after(left)) {
            tracing::error!(error = %e, "the run keeper did not take the new deadline");
        }
        // The keeper reached its deadline before this confirmation (this process was stopped,
        // or the beat came at the last moment): its runs are handled as after a lapse.
        if !state.frozen && !keeper.frozen().is_empty() {
            freeze_all(inner, &mut state).await;
        }
    }
    if !state.frozen {
        return;
    }
    let epoch = state.epoch;
    for id in inner.supervisors.ids() {
        let current = match inner.store.get_task(&id).await {
            Ok(current) => current.map(Box::new),
            Err(e) => {
                // Stays frozen; the next beat checks again.
                tracing::warn!(task = %id, error = %e, "could not check a frozen run's task");
                return;
            }
        };
        inner
            .supervisors
            .lease(&id, LeaseNotice::Renewed { epoch, current })
            .await;
    }
    state.frozen = false;
    tracing::info!("leases renewed; runs still this instance's go on");
}

/// Freezes every run of this instance whenever its lease clock runs out, until shutdown.
pub(crate) async fn guard(inner: Arc<EngineState>) {
    if !inner.store.is_shared() {
        return;
    }
    let mut until = inner.instance.clock.until.subscribe();
    loop {
        let deadline = until.borrow_and_update().saturating_sub(margin(&inner));
        let left = deadline.saturating_sub(unix_millis_now());
        if left > 0 {
            let wait = Duration::from_millis(u64::try_from(left).unwrap_or(u64::MAX));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                changed = until.changed() => if changed.is_err() { return },
                () = inner.instance.stop.cancelled() => return,
            }
            continue;
        }
        lapse(&inner).await;
        tokio::select! {
            changed = until.changed() => if changed.is_err() { return },
            () = inner.instance.stop.cancelled() => return,
        }
    }
}

/// The lease clock ran out: every run is frozen (once per lapse).
async fn lapse(inner: &EngineState) {
    let mut state = inner.instance.clock.state.lock().await;
    let deadline = inner
        .instance
        .clock
        .until
        .borrow()
        .saturating_sub(margin(inner));
    if state.frozen || unix_millis_now() < deadline {
        return;
    }
    tracing::warn!(
        "this instance could not renew its leases in time; freezing its runs until it does"
    );
    freeze_all(inner, &mut state).await;
}

/// Marks the runs frozen (a new freeze number) and tells each to freeze.
async fn freeze_all(inner: &EngineState, state: &mut FenceState) {
    state.frozen = true;
    state.epoch += 1;
    let epoch = state.epoch;
    for id in inner.supervisors.ids() {
        inner
            .supervisors
            .lease(&id, LeaseNotice::Lapsed { epoch })
            .await;
    }
}
