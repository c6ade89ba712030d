//! Crash injection for tests: `HANDOFF_TEST_ABORT_AT=<point>` makes the process abort (no
//! cleanup, like kill -9) when it reaches the named point, so a test can place a crash exactly
//! where a race would otherwise need luck. Read once; nothing happens when it is unset. Each
//! crate names its own points next to where it calls [`abort_at`].

use std::sync::OnceLock;

/// The variable naming the point to abort at.
pub const ABORT_AT_ENV: &str = "HANDOFF_TEST_ABORT_AT";

/// Aborts the process when `point` is the one [`ABORT_AT_ENV`] names.
pub fn abort_at(point: &str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    let at = AT.get_or_init(|| std::env::var(ABORT_AT_ENV).ok());
    if at.as_deref() == Some(point) {
        eprintln!("handoff: {ABORT_AT_ENV}={point}: aborting");
        std::process::abort();
    }
}
