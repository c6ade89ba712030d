use std::{num::NonZeroU32, time::Duration};

use governor::{
    Quota, RateLimiter,
    clock::{Clock, DefaultClock},
    state::keyed::DefaultKeyedStateStore,
};
use handoff_task::AgentId;

/// Per-agent token bucket for submissions.
pub(crate) struct SubmissionRate {
    limiter: Option<RateLimiter<AgentId, DefaultKeyedStateStore<AgentId>, DefaultClock>>,
}

impl SubmissionRate {
    /// `per_minute = None` disables the limit.
    pub(crate) fn new(per_minute: Option<u32>, burst: u32) -> Self {
        let limiter = per_minute.and_then(NonZeroU32::new).map(|rate| {
            let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
            RateLimiter::keyed(Quota::per_minute(rate).allow_burst(burst))
        });
        Self { limiter }
    }

    /// Takes one token for `agent`, or says how long until one is available.
    pub(crate) fn check(&self, agent: &AgentId) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        limiter
            .check_key(agent)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

impl crate::Engine {
    /// Charges `agent` (`None`: every caller without an identity, together) one token of its
    /// submission rate for a call that failed through its own fault, so invalid calls meet
    /// the same limit as submissions; `Err` with the wait when none is left.
    pub fn charge_failed_call(&self, agent: Option<&AgentId>) -> Result<(), Duration> {
        match agent {
            Some(agent) => self.inner.rate.check(agent),
            None => self.inner.rate.check(&anonymous()),
        }
    }

    /// The engine's metrics, for the tool layer's counters.
    pub fn metrics(&self) -> &crate::EngineMetrics {
        &self.inner.metrics
    }
}

/// The key of the bucket callers without an identity share (an agent that names itself `-`
/// shares it too; agent names are the callers' own, so that costs no one else anything).
fn anonymous() -> AgentId {
    AgentId::parse("-").unwrap_or_else(|_| unreachable!("`-` is a valid agent id"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refusal_per_agent() {
        let rate = SubmissionRate::new(Some(1), 2);
        let a = AgentId::parse("a").unwrap();
        let b = AgentId::parse("b").unwrap();
        assert!(rate.check(&a).is_ok());
        assert!(rate.check(&a).is_ok());
        let wait = rate.check(&a).unwrap_err();
        assert!(wait > Duration::from_secs(1), "{wait:?}");
        assert!(rate.check(&b).is_ok(), "other agents have their own bucket");
    }

    #[test]
    fn unlimited_when_disabled() {
        let rate = SubmissionRate::new(None, 1);
        let a = AgentId::parse("a").unwrap();
        for _ in 0..1000 {
            assert!(rate.check(&a).is_ok());
        }
    }
}
