//! When a room hears about a task: status changes at once, other events coalesced into at
//! most one message per interval — however fast they arrive, and however long the homeserver
//! was unreachable, there is at most one message in flight and one more owed.

use std::time::Duration;

use tokio::time::Instant;

/// What the poster should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Post now.
    Post,
    /// Nothing before this time (events are owed but the interval has not passed).
    WaitUntil(Instant),
    /// Nothing owed: wait for news.
    Idle,
}

/// The coalescing state of one room.
#[derive(Debug, Clone)]
pub struct Pacer {
    interval: Duration,
    last_post: Option<Instant>,
    events: bool,
    status: bool,
}

impl Pacer {
    /// A room that posts events at most once per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            last_post: None,
            events: false,
            status: false,
        }
    }

    /// News arrived: a status change, or other events.
    pub fn mark(&mut self, status_changed: bool) {
        if status_changed {
            self.status = true;
        } else {
            self.events = true;
        }
    }

    /// What to do at `now`.
    pub fn next(&self, now: Instant) -> Next {
        if self.status {
            return Next::Post;
        }
        if !self.events {
            return Next::Idle;
        }
        match self.last_post {
            Some(last) if now < last + self.interval => Next::WaitUntil(last + self.interval),
            _ => Next::Post,
        }
    }

    /// A message went out at `now`, covering everything marked so far.
    pub fn posted(&mut self, now: Instant) {
        self.last_post = Some(now);
        self.events = false;
        self.status = false;
    }
}

/// Exponential back-off with jitter for calls to the homeserver: 0.5 s doubling to 60 s.
pub fn backoff(attempt: u32) -> Duration {
    let ceiling = Duration::from_millis(500)
        .saturating_mul(1u32 << attempt.min(7))
        .min(Duration::from_secs(60));
    let mut byte = [0u8; 1];
    let jitter = match getrandom::fill(&mut byte) {
        Ok(()) => f64::from(byte[0]) / 255.0,
        Err(_) => 0.5,
    };
    ceiling.mul_f64(0.5 + 0.5 * jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_coalesced_to_one_message_per_interval_and_status_goes_at_once() {
        let t0 = Instant::now();
        let second = Duration::from_secs(1);
        let mut pacer = Pacer::new(second);
        assert_eq!(pacer.next(t0), Next::Idle);
        pacer.mark(false);
        assert_eq!(pacer.next(t0), Next::Post, "the first events go at once");
        pacer.posted(t0);
        for _ in 0..50 {
            pacer.mark(false);
        }
        assert_eq!(pacer.next(t0), Next::WaitUntil(t0 + second));
        assert_eq!(
            pacer.next(t0 + second / 2),
            Next::WaitUntil(t0 + second),
            "fifty events, still one message owed"
        );
        assert_eq!(pacer.next(t0 + second), Next::Post);
        pacer.mark(true);
        assert_eq!(pacer.next(t0), Next::Post, "a status change does not wait");
        pacer.posted(t0 + second);
        assert_eq!(pacer.next(t0 + second * 5), Next::Idle);
    }

    #[test]
    fn back_off_grows_and_is_capped() {
        assert!(backoff(0) <= Duration::from_millis(500));
        assert!(backoff(0) >= Duration::from_millis(250));
        assert!(backoff(30) <= Duration::from_secs(60));
        assert!(backoff(30) >= Duration::from_secs(30));
    }
}
