//! Waiting in the isolation tests: on a fact, polled with a short back-off and a deadline that
//! is only a safety net, and the one short window a negative needs.

use std::{
    fmt::Debug,
    time::{Duration, Instant},
};

/// How long a wait on a fact may take before the test fails: a safety net, never what decides
/// a result (a loaded machine can be slow).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// How long something known to be stopped is watched for progress.
const STILL: Duration = Duration::from_millis(300);

/// Polls `done` with a short back-off until it holds; fails the test after [`PATIENCE`].
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + PATIENCE;
    let mut pause = Duration::from_millis(5);
    while !done() {
        assert!(Instant::now() < give_up, "timed out waiting for {what}");
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Fails with `what` if `observe` changes within [`STILL`]; returns what it saw. That something
/// does not happen can only be shown over some time: called once the fact that makes it hold
/// (a stopped group, a frozen cgroup) was seen, this is no wait for an outcome.
pub fn assert_unchanged<T: PartialEq + Debug>(what: &str, observe: impl Fn() -> T) -> T {
    let before = observe();
    std::thread::sleep(STILL);
    assert_eq!(observe(), before, "{what}");
    before
}
