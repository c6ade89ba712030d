//! Bounded pressure on Letta: at most N calls in flight and M started per second, across every
//! task of this process, so a hundred busy tasks queue here instead of flooding the server.

use std::{num::NonZeroU32, sync::Arc};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The shared limits of one client.
#[derive(Debug)]
pub(crate) struct Pressure {
    in_flight: Arc<Semaphore>,
    per_second: DefaultDirectRateLimiter,
}

impl Pressure {
    /// At most `concurrent` calls at once and `per_second` started per second (each ≥ 1).
    pub fn new(concurrent: u32, per_second: u32) -> Self {
        let rate = NonZeroU32::new(per_second).unwrap_or(NonZeroU32::MIN);
        Self {
            in_flight: Arc::new(Semaphore::new(concurrent.max(1) as usize)),
            per_second: RateLimiter::direct(Quota::per_second(rate)),
        }
    }

    /// Waits for a slot in flight and a start in this second's budget; the slot is held until
    /// the returned permit is dropped. `None` only if the semaphore was closed.
    pub async fn admit(&self) -> Option<OwnedSemaphorePermit> {
        let permit = self.in_flight.clone().acquire_owned().await.ok()?;
        self.per_second.until_ready().await;
        Some(permit)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[tokio::test]
    async fn starts_are_held_to_the_budget() {
        let p = Pressure::new(100, 10);
        let start = Instant::now();
        // The first second's burst is the budget; the next ten need about another second.
        for _ in 0..20 {
            drop(p.admit().await);
        }
        assert!(
            start.elapsed() >= Duration::from_millis(900),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn calls_in_flight_are_bounded() {
        let p = Arc::new(Pressure::new(2, 1000));
        let a = p.admit().await;
        let b = p.admit().await;
        let third = tokio::time::timeout(Duration::from_millis(100), p.admit()).await;
        assert!(third.is_err(), "a third call must wait");
        drop(a);
        let third = tokio::time::timeout(Duration::from_millis(500), p.admit()).await;
        assert!(third.is_ok());
        drop(b);
    }
}
