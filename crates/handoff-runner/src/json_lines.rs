//! Executors that speak JSON lines on a process's stdout (Claude Code, Codex) read the
//! `command` executor's events the same way: parsed lines to interpret, the rest passed on.

use serde_json::Value;

use crate::{OutputStream, RunEvent, RunOutcome};

/// One event of the underlying process, sorted.
pub(crate) enum Said {
    /// A stdout line that is JSON.
    Json(Value),
    /// Anything else to pass on as it is (stderr, non-JSON stdout, Handoff's own notes).
    Other(RunEvent),
    /// The process ended.
    Ended(RunOutcome),
}

/// Sorts `event`; a closed channel means the process vanished (`agent` names it).
pub(crate) fn sort(event: Option<RunEvent>, agent: &str) -> Said {
    match event {
        Some(RunEvent::Output {
            stream: OutputStream::Stdout,
            line,
        }) => match serde_json::from_str::<Value>(&line) {
            Ok(value) => Said::Json(value),
            Err(_) => Said::Other(RunEvent::Output {
                stream: OutputStream::Stdout,
                line,
            }),
        },
        Some(RunEvent::Finished(outcome)) => Said::Ended(outcome),
        Some(other) => Said::Other(other),
        None => Said::Ended(RunOutcome {
            error: Some(format!("{agent}'s process vanished")),
            ..RunOutcome::default()
        }),
    }
}
