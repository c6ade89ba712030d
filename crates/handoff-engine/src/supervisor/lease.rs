//! The run's side of self-fencing ([`crate::fence`]): frozen when this instance could not
//! renew its leases in time, thawed when the task turned out to be still its own, killed —
//! without writing anything — when another instance took it over meanwhile.

use super::actor::Supervisor;
use crate::{
    fence::{LeaseNotice, still_ours},
    finish::StopReason,
};

impl Supervisor {
    /// Handles what became of the run's lease.
    pub(super) async fn lease(&mut self, notice: LeaseNotice) {
        match notice {
            LeaseNotice::Lapsed { epoch } => {
                if epoch <= self.lease_epoch {
                    return;
                }
                self.lease_epoch = epoch;
                self.lease_frozen = true;
                self.freeze_for_lease().await;
            }
            LeaseNotice::Renewed { epoch, current } => {
                // A check about an older freeze: a newer one is in force.
                if epoch != self.lease_epoch || !self.lease_frozen {
                    return;
                }
                if still_ours(&self.task, current.as_ref()) {
                    self.thaw_for_lease().await;
                } else {
                    tracing::warn!(task = %self.task.id, "another instance took the task over while its run was frozen; killing the run");
                    self.decide_stop(StopReason::Lost);
                }
            }
        }
    }

    /// Freezes the executor's processes (no state change is written: the store may be
    /// unreachable, and the task is not paused by anyone). An executor that cannot be frozen
    /// is stopped instead: it must not go on beside a takeover.
    pub(super) async fn freeze_for_lease(&mut self) {
        let Some(control) = self.control.clone() else {
            // Not started yet: frozen as soon as it attaches.
            return;
        };
        if !self.capabilities().pause {
            tracing::warn!(task = %self.task.id, "the lease lapsed and this executor cannot be frozen; stopping its run");
            self.decide_stop(StopReason::LeaseLapsed);
            return;
        }
        if self.user_paused {
            return;
        }
        if let Err(e) = control.pause().await {
            tracing::warn!(task = %self.task.id, error = %e, "could not freeze the run; stopping it");
            self.decide_stop(StopReason::LeaseLapsed);
        } else {
            tracing::info!(task = %self.task.id, "run frozen: the lease lapsed");
        }
    }

    /// The lease was re-won with the same fencing token: the run goes on (a run paused by
    /// its owner stays paused).
    async fn thaw_for_lease(&mut self) {
        self.lease_frozen = false;
        let Some(control) = self.control.clone() else {
            return;
        };
        if self.user_paused || !self.capabilities().pause {
            return;
        }
        match control.resume().await {
            Ok(()) => tracing::info!(task = %self.task.id, "run thawed: the lease was renewed"),
            Err(e) => {
                tracing::warn!(task = %self.task.id, error = %e, "could not thaw the run");
            }
        }
    }
}
