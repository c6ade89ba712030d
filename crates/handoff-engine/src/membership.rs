//! This instance's membership of the store: registered at start, a heartbeat that renews the
//! leases of the tasks it runs, marked draining when it shuts down and removed once its runs
//! settled. An instance the store no longer knows (another one declared it lost and takes its
//! tasks over) kills its runs at once — without writing anything about them: the new owner
//! decides their state — and comes back as a new instance, under a new id, so that its old
//! leases are never renewed again.
//!
//! Durable: the instance's record in the store. Who the instance is lives in `instance`.

use std::sync::Arc;

use handoff_task::unix_millis_now;

use crate::{EngineError, fence, finish::StopReason, instance::millis, state::EngineState};

/// Registers this instance; its leases are known to hold for a lease expiry from now.
pub(crate) async fn register(inner: &EngineState) -> Result<(), EngineError> {
    let at = unix_millis_now();
    inner
        .store
        .register_instance(&inner.instance.record())
        .await?;
    let until = at.saturating_add(millis(inner.config.instance.lease_expiry));
    fence::confirmed(inner, until).await;
    tracing::info!(instance = %inner.instance.id(), "registered this instance");
    Ok(())
}

/// Beats until [`Instance::stop`]; each beat renews the leases of this instance's tasks and,
/// once the store confirmed it, moves the lease clock on (thawing runs frozen meanwhile).
///
/// [`Instance::stop`]: crate::instance::Instance::stop
pub(crate) async fn heartbeats(inner: Arc<EngineState>) {
    let every = inner.config.instance.heartbeat;
    let expiry = millis(inner.config.instance.lease_expiry);
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = inner.instance.stop.cancelled() => return,
        }
        // The lease runs from before the write is sent: whenever the store applies it, the
        // lease it grants ends no later than this.
        let now = unix_millis_now();
        let until = now.saturating_add(expiry);
        match inner
            .store
            .heartbeat(&inner.instance.id(), now, until)
            .await
        {
            Ok(Some(_)) => {
                fence::confirmed(&inner, until).await;
                count_live(&inner).await;
            }
            Ok(None) => declared_lost(&inner).await,
            Err(e) => {
                inner.instance.clock.unreachable();
                tracing::error!(error = %e, "heartbeat failed");
            }
        }
    }
}

/// Counts the instances sharing the store that take work (a shared store only).
async fn count_live(inner: &EngineState) {
    if !inner.store.is_shared() {
        return;
    }
    if let Ok(instances) = inner.store.instances().await {
        let live = instances.iter().filter(|i| !i.instance.draining).count();
        inner
            .instance
            .live
            .store(live.max(1), std::sync::atomic::Ordering::Relaxed);
    }
}

/// Another instance declared this one lost and takes its tasks over: every run is killed at
/// once and nothing is written about them; the instance comes back under a new id, so its
/// old leases stay expired for the rescuer.
async fn declared_lost(inner: &EngineState) {
    let old = inner.instance.id();
    tracing::warn!(instance = %old, "this instance was declared lost; killing its runs");
    inner.supervisors.stop_all(StopReason::Lost).await;
    let new = inner.instance.renew_id();
    tracing::info!(old = %old, new = %new, "coming back as a new instance");
    if let Err(e) = register(inner).await {
        tracing::error!(error = %e, "could not register this instance again");
    }
}

/// Removes the predecessor's registration once its tasks were taken over (it is dead; the
/// rescuer would otherwise count it until its heartbeat expired).
pub(crate) async fn forget_predecessor(inner: &EngineState) {
    let Some(predecessor) = &inner.instance.predecessor else {
        return;
    };
    if let Err(e) = inner.store.deregister_instance(predecessor).await {
        tracing::warn!(error = %e, "could not deregister the previous instance");
    }
}

/// Marks this instance draining: it claims nothing more.
pub(crate) async fn drain(inner: &EngineState) {
    if let Err(e) = inner.store.set_draining(&inner.instance.id()).await {
        tracing::warn!(error = %e, "could not mark this instance draining");
    }
}

/// Ends the heartbeats and removes this instance (its runs have settled).
pub(crate) async fn leave(inner: &EngineState) {
    inner.instance.stop.cancel();
    if let Err(e) = inner.store.deregister_instance(&inner.instance.id()).await {
        tracing::warn!(error = %e, "could not deregister this instance");
    }
}
