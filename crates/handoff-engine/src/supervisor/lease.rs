//! The run's side of self-fencing ([`crate::fence`]): frozen when this instance could not
//! renew its leases in time, thawed when the task turned out to be still its own, killed —
//! without writing anything — when another instance took it over meanwhile.

use handoff_runner::RunControl;

use super::actor::Supervisor;
use crate::{
    finish::StopReason,
    lease_clock::{LeaseNotice, still_ours},
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
                if still_ours(&self.task, current.as_deref()) {
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
        match control.pause().await {
            Ok(()) => tracing::info!(task = %self.task.id, "run frozen: the lease lapsed"),
            // Its processes are gone: nothing is left to run beside a takeover.
            Err(handoff_runner::RunnerError::Finished) => {}
            Err(e) => {
                tracing::warn!(task = %self.task.id, error = %e, "could not freeze the run; stopping it");
                self.decide_stop(StopReason::LeaseLapsed);
            }
        }
    }

    /// The run's name with the run keeper: one per claim of the task.
    fn run_key(&self) -> String {
        format!("{}-r{}", self.task.id, self.task.fence)
    }

    /// Hands the attached run to the run keeper, which freezes it from outside should the
    /// lease lapse while this server cannot act.
    pub(super) fn guard_run(&self, control: &dyn RunControl) {
        let (Some(keeper), Some(target)) = (self.state.run_fence.get(), control.fence_target())
        else {
            return;
        };
        if let Err(e) = keeper.guard(&self.run_key(), &target) {
            tracing::error!(task = %self.task.id, error = %e, "the run keeper does not guard this run");
        }
    }

    /// The run is over: the keeper forgets it.
    pub(super) fn release_run(&self) {
        if let Some(keeper) = self.state.run_fence.get() {
            let _ = keeper.release(&self.run_key());
        }
    }

    /// The lease was re-won with the same fencing token: the run goes on (a run paused by
    /// its owner stays paused).
    async fn thaw_for_lease(&mut self) {
        self.lease_frozen = false;
        if let Some(keeper) = self.state.run_fence.get() {
            let key = self.run_key();
            let thawed = if self.user_paused {
                // Stays frozen for its owner; the keeper forgets that it froze it.
                let target = self.control.as_ref().and_then(|c| c.fence_target());
                keeper.release(&key).and_then(|()| match &target {
                    Some(target) => keeper.guard(&key, target),
                    None => Ok(()),
                })
            } else {
                keeper.thaw(&key)
            };
            if let Err(e) = thawed {
                tracing::warn!(task = %self.task.id, error = %e, "the run keeper did not thaw the run");
            }
        }
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
