//! Waiting for a fact, not for time: the suite's one polling loop (and its async twin). A
//! test says what it waits for and looks at the system until it sees it; the deadline is only
//! a safety net, long enough that machine load never decides a result.

use std::{
    fmt::Display,
    process::{Child, ExitStatus},
    time::{Duration, Instant},
};

/// The safety net of a wait on a fact that must come: a failed wait is a failed test, never a
/// slow machine.
pub const PATIENCE: Duration = Duration::from_secs(90);

/// The safety net of a wait on a real coding agent's next step (its first model turn, a tool
/// call): with the whole suite running on two cores, a first step was seen to take over 90 s.
pub const AGENT_PATIENCE: Duration = Duration::from_secs(240);

/// How often a wait looks again: from `first`, doubling up to `most`.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    first: Duration,
    most: Duration,
}

impl Pace {
    /// Soon at first, then every quarter of a second: for probes that cost little.
    pub const BACK_OFF: Pace = Pace {
        first: Duration::from_millis(10),
        most: Duration::from_millis(250),
    };

    /// Every `interval`: for probes the other side wants made at its own pace.
    pub const fn every(interval: Duration) -> Pace {
        Pace {
            first: interval,
            most: interval,
        }
    }

    fn next(&mut self) -> Duration {
        let now = self.first;
        self.first = (self.first * 2).min(self.most);
        now
    }
}

/// What a probe saw: the fact waited for, or what it saw instead (shown if the wait fails).
pub trait Observation<T> {
    /// `Ok` with the fact, or `Err` with a description of what was seen instead.
    fn fact(self) -> Result<T, String>;
}

impl<T> Observation<T> for Option<T> {
    fn fact(self) -> Result<T, String> {
        self.ok_or_else(|| "not yet".to_owned())
    }
}

impl<T, E: Display> Observation<T> for Result<T, E> {
    fn fact(self) -> Result<T, String> {
        self.map_err(|seen| seen.to_string())
    }
}

impl Observation<()> for bool {
    fn fact(self) -> Result<(), String> {
        if self { Ok(()) } else { Err("no".to_owned()) }
    }
}

/// Looks with `probe` at `pace` until it sees its fact or `limit` passed: the fact, or the
/// last thing it saw instead.
pub fn poll<T, O: Observation<T>>(
    limit: Duration,
    mut pace: Pace,
    mut probe: impl FnMut() -> O,
) -> Result<T, String> {
    let deadline = Instant::now() + limit;
    loop {
        let seen = match probe().fact() {
            Ok(fact) => return Ok(fact),
            Err(seen) => seen,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(seen);
        }
        // The suite's one pause between two looks at a synchronous fact.
        std::thread::sleep(pace.next().min(left));
    }
}

/// Waits until `probe` sees `what`, looking soon and then every quarter of a second; panics
/// with `what` and the last observation after `limit`.
pub fn wait_until<T, O: Observation<T>>(
    what: &str,
    limit: Duration,
    probe: impl FnMut() -> O,
) -> T {
    wait_paced(what, limit, Pace::BACK_OFF, probe)
}

/// [`wait_until`] looking at `pace`.
pub fn wait_paced<T, O: Observation<T>>(
    what: &str,
    limit: Duration,
    pace: Pace,
    probe: impl FnMut() -> O,
) -> T {
    poll(limit, pace, probe)
        .unwrap_or_else(|seen| panic!("waited {limit:?} for {what}; last seen: {seen}"))
}

/// [`wait_until`] for a probe that awaits (inside a runtime the test already runs).
pub async fn wait_until_async<T, O: Observation<T>>(
    what: &str,
    limit: Duration,
    mut probe: impl AsyncFnMut() -> O,
) -> T {
    let deadline = Instant::now() + limit;
    let mut pace = Pace::BACK_OFF;
    loop {
        let seen = match probe().await.fact() {
            Ok(fact) => return fact,
            Err(seen) => seen,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "waited {limit:?} for {what}; last seen: {seen}"
        );
        // The suite's one pause between two looks at an asynchronous fact.
        tokio::time::sleep(pace.next().min(left)).await;
    }
}

/// Waits for `child` to exit: its status, or `None` if it still runs after `limit`.
pub fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    poll(limit, Pace::BACK_OFF, || match child.try_wait() {
        Ok(Some(status)) => Ok(status),
        Ok(None) => Err("still running".to_owned()),
        Err(e) => Err(e.to_string()),
    })
    .ok()
}
