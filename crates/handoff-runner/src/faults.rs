//! The runner's crash-injection points (see [`handoff_task::faults`]).

pub use handoff_task::faults::ABORT_AT_ENV;

/// After a run's process was spawned, before anything about it is returned (and recorded).
pub const AFTER_SPAWN: &str = "after_spawn_before_record";
/// After the managed OpenCode server was spawned, before it answers.
pub const AFTER_SERVER_SPAWN: &str = "after_opencode_server_spawn";

/// Aborts the process when `point` is the one [`ABORT_AT_ENV`] names.
pub(crate) fn abort_at(point: &str) {
    handoff_task::faults::abort_at(point);
}
