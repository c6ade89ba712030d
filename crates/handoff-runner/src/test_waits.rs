//! The one polling helper of this crate's unit tests: waits on a fact with a short back-off,
//! its deadline only a safety net.

use std::{fmt::Debug, time::Duration};

/// How long a wait on a fact may take before the test fails: a safety net, never what decides
/// a result (a loaded machine can be slow).
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// Looks at `probe` until it yields `Ok`, with a short back-off between looks; after
/// [`WAIT_LIMIT`] panics with `what` and the last observation (`Err`).
pub(crate) async fn until<T, O: Debug>(what: &str, mut probe: impl FnMut() -> Result<T, O>) -> T {
    let give_up = std::time::Instant::now() + WAIT_LIMIT;
    let mut pause = Duration::from_millis(5);
    loop {
        match probe() {
            Ok(value) => return value,
            Err(seen) => assert!(
                std::time::Instant::now() < give_up,
                "waited {WAIT_LIMIT:?} for {what}; last seen: {seen:?}"
            ),
        }
        // The pause between two looks at a fact nothing announces.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}
