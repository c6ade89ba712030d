use std::{num::NonZeroU32, time::Duration};

use governor::{
    Quota, RateLimiter,
    clock::{Clock, DefaultClock},
    state::keyed::DefaultKeyedStateStore,
};
use handoff_store::{Store, StoreError};
use handoff_task::AgentId;

use crate::EngineError;

/// A token bucket per key (an agent's submissions, a task's model calls…): in memory for one
/// instance, in the store (the same bucket, as a GCRA) when several instances share it.
pub(crate) struct KeyedRate {
    /// What the buckets count: the store keys them `<what>:<key>`.
    what: &'static str,
    limiter: Option<RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock>>,
    /// One token per this many ms, and how far ahead of it a burst may run.
    shared: Option<(i64, i64)>,
}

impl KeyedRate {
    /// Buckets of `what`; `per_minute = None` disables the limit.
    pub(crate) fn new(what: &'static str, per_minute: Option<u32>, burst: u32) -> Self {
        let per_minute = per_minute.and_then(NonZeroU32::new);
        let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        let limiter =
            per_minute.map(|rate| RateLimiter::keyed(Quota::per_minute(rate).allow_burst(burst)));
        let shared = per_minute.map(|rate| {
            let interval = (60_000 / i64::from(rate.get())).max(1);
            (interval, interval * (i64::from(burst.get()) - 1))
        });
        Self {
            what,
            limiter,
            shared,
        }
    }

    /// Takes one token for `key` from the bucket every instance sharing `store` draws on.
    async fn check_shared(
        &self,
        store: &dyn Store,
        key: &str,
    ) -> Result<Result<(), Duration>, StoreError> {
        let Some((interval, tolerance)) = self.shared else {
            return Ok(Ok(()));
        };
        let key = format!("{}:{key}", self.what);
        let now = handoff_task::unix_millis_now();
        let wait = store.take_rate(&key, interval, tolerance, now).await?;
        Ok(match wait {
            None => Ok(()),
            Some(ms) => Err(Duration::from_millis(u64::try_from(ms).unwrap_or(1))),
        })
    }

    /// Takes one token for `key` from the bucket it is charged against: the one every
    /// instance draws on when `store` is shared, else this instance's own.
    pub(crate) async fn take(
        &self,
        store: &dyn Store,
        key: &str,
    ) -> Result<Result<(), Duration>, StoreError> {
        if store.is_shared() {
            self.check_shared(store, key).await
        } else {
            Ok(self.check(key))
        }
    }

    /// Takes one token for `key`, or says how long until one is available.
    pub(crate) fn check(&self, key: &str) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        limiter
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

impl crate::Engine {
    /// Charges `agent` (`None`: every caller without an identity, together) one token of its
    /// submission rate for a call that failed through its own fault, so invalid calls meet
    /// the same limit as submissions (on a shared store, the bucket every instance draws on);
    /// `Err` with the wait when none is left.
    pub async fn charge_failed_call(&self, agent: Option<&AgentId>) -> Result<(), Duration> {
        let agent = agent.cloned().unwrap_or_else(anonymous);
        let inner = &self.inner;
        match inner.rate.take(&*inner.store, agent.as_str()).await {
            Ok(charged) => charged,
            // Still charged, against this instance's own bucket: never left uncharged.
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "failed-call charge: the shared bucket is unreadable; this instance's is used"
                );
                inner.rate.check(agent.as_str())
            }
        }
    }

    /// Records `caller`'s changing call `key` for the loop guard, in the history every instance
    /// sharing the store keeps, and returns the caller's calls within `window` (at most
    /// `keep`), oldest first, this one last.
    pub async fn record_call(
        &self,
        caller: &str,
        key: &str,
        window: Duration,
        keep: u32,
    ) -> Result<Vec<String>, EngineError> {
        let now = handoff_task::unix_millis_now();
        let window = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
        let since = now.saturating_sub(window);
        Ok(self
            .inner
            .store
            .record_call(caller, key, now, since, keep)
            .await?)
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
        let rate = KeyedRate::new("submit", Some(1), 2);
        let (a, b) = ("a", "b");
        assert!(rate.check(a).is_ok());
        assert!(rate.check(a).is_ok());
        let wait = rate.check(a).unwrap_err();
        assert!(wait > Duration::from_secs(1), "{wait:?}");
        assert!(rate.check(b).is_ok(), "other agents have their own bucket");
    }

    #[test]
    fn the_shared_bucket_has_the_same_rate_and_burst() {
        assert_eq!(
            KeyedRate::new("submit", Some(60), 5).shared,
            Some((1_000, 4_000))
        );
        assert_eq!(
            KeyedRate::new("submit", Some(1), 1).shared,
            Some((60_000, 0))
        );
        assert_eq!(KeyedRate::new("submit", None, 5).shared, None);
        assert_eq!(KeyedRate::new("submit", Some(0), 5).shared, None);
    }

    #[test]
    fn unlimited_when_disabled() {
        let rate = KeyedRate::new("submit", None, 1);
        let a = "a";
        for _ in 0..1000 {
            assert!(rate.check(a).is_ok());
        }
    }
}
