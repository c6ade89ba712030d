//! When to try a Letta call again: exponential back-off with full jitter, or exactly what a
//! `Retry-After` header asked for (seconds or an HTTP date), within a ceiling.

use std::time::{Duration, SystemTime};

/// Longest wait between two attempts, whatever `Retry-After` says.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(60);

/// Exponential back-off: `base × 2^(attempt-1)`, capped, then a uniformly random part of it
/// ("full jitter"), so many tasks retrying against one server spread out instead of beating
/// in step.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// The first wait's ceiling.
    pub base: Duration,
    /// The ceiling of every wait.
    pub cap: Duration,
}

impl Backoff {
    /// The wait before attempt `attempt + 1`, after `attempt` failures (from 1).
    pub fn wait(&self, attempt: u32) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20))
            .min(self.cap);
        // At least a tenth of the ceiling, so a retry never fires immediately.
        ceiling.mul_f64(0.1 + 0.9 * unit_random())
    }
}

/// A random number in [0, 1) from the operating system (0.5 if it has none to give).
fn unit_random() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.5,
    }
}

/// The wait a `Retry-After` header value asks for: delta-seconds or an HTTP date.
pub(crate) fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX_WAIT));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(at.timestamp()).ok()?);
    Some(
        at.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_WAIT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_within_their_ceiling_and_the_cap() {
        let b = Backoff {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
        };
        for attempt in 1..=10 {
            let ceiling = (Duration::from_millis(100) * (1 << (attempt - 1))).min(b.cap);
            for _ in 0..50 {
                let w = b.wait(attempt);
                assert!(w >= ceiling / 10 && w <= ceiling, "{attempt}: {w:?}");
            }
        }
    }

    #[test]
    fn waits_are_spread() {
        let b = Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(1),
        };
        let waits: std::collections::HashSet<_> = (0..20).map(|_| b.wait(1)).collect();
        assert!(waits.len() > 10, "jitter should spread retries: {waits:?}");
    }

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470);
        assert_eq!(retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        // Wed, 21 Oct 2015 07:28:00 GMT is 1_445_412_480: ten seconds after `now`.
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("99999", now), Some(MAX_WAIT));
        assert_eq!(retry_after("soon", now), None);
    }
}
