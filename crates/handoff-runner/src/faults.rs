//! Crash injection for tests: `HANDOFF_TEST_ABORT_AT=<point>` makes the process abort (no
//! cleanup, like kill -9) when it reaches the named point, so a test can place a crash exactly
//! where a race would otherwise need luck. Read once; nothing happens when it is unset.

use std::sync::OnceLock;

/// The variable naming the point to abort at.
pub const ABORT_AT_ENV: &str = "HANDOFF_TEST_ABORT_AT";

/// After a run's process was spawned, before anything about it is returned (and recorded).
pub const AFTER_SPAWN: &str = "after_spawn_before_record";
/// After the managed OpenCode server was spawned, before it answers.
pub const AFTER_SERVER_SPAWN: &str = "after_opencode_server_spawn";

/// Aborts the process when `point` is the one [`ABORT_AT_ENV`] names.
pub(crate) fn abort_at(point: &str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    let at = AT.get_or_init(|| std::env::var(ABORT_AT_ENV).ok());
    if at.as_deref() == Some(point) {
        eprintln!("handoff: {ABORT_AT_ENV}={point}: aborting");
        std::process::abort();
    }
}
