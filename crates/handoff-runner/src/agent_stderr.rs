//! An agent's stderr (OpenCode's, Claude Code's, Codex's, any ACP agent's): its diagnostics,
//! not the task's output — their output comes over their protocol. Each line goes to Handoff's
//! log at debug level; the task's events get none of it, except the last lines when the run
//! fails, clipped, as one note that explains the failure. The `command` executor's stderr is
//! its program's output and does not come here.

use std::collections::VecDeque;

use handoff_task::{EventKind, NewEvent};
use serde_json::json;

use crate::{OutputStream, RunEvent, RunOutcome, text::clip};

/// Lines kept to explain a failed run.
const TAIL_LINES: usize = 20;
/// Bytes kept of each of them (a minified stack trace is one enormous line).
const LINE_BYTES: usize = 300;

/// The last lines an agent wrote to stderr.
#[derive(Debug)]
pub(crate) struct StderrTail {
    agent: String,
    lines: VecDeque<String>,
}

impl StderrTail {
    /// The tail of `agent`'s stderr (the name is for the log).
    pub(crate) fn new(agent: &str) -> Self {
        Self {
            agent: agent.to_owned(),
            lines: VecDeque::new(),
        }
    }

    /// Keeps `event` if it is stderr (logging it) and hands anything else back.
    pub(crate) fn take(&mut self, event: RunEvent) -> Option<RunEvent> {
        let (RunEvent::Output {
            stream: OutputStream::Stderr,
            line: text,
        }
        | RunEvent::OutputPart {
            stream: OutputStream::Stderr,
            text,
        }) = event
        else {
            return Some(event);
        };
        tracing::debug!(agent = %self.agent, line = %text, "agent stderr");
        if self.lines.len() == TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(clip(&text, LINE_BYTES));
        None
    }

    /// The note for a run that ended with `outcome`: its last lines on stderr, when it failed
    /// and wrote any.
    pub(crate) fn note_for(&self, outcome: &RunOutcome) -> Option<RunEvent> {
        if outcome.success || self.lines.is_empty() {
            return None;
        }
        let lines: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        let message = format!(
            "{}'s last lines on stderr:\n{}",
            self.agent,
            lines.join("\n")
        );
        let event = NewEvent::new(EventKind::Log, message).with_data(json!({"stream": "stderr"}));
        Some(RunEvent::Event(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stderr(line: &str) -> RunEvent {
        RunEvent::Output {
            stream: OutputStream::Stderr,
            line: line.to_owned(),
        }
    }

    #[test]
    fn stderr_is_kept_out_of_the_events_and_explains_a_failure_briefly() {
        let failed = RunOutcome::default();
        let mut tail = StderrTail::new("OpenCode");
        assert!(
            tail.note_for(&failed).is_none(),
            "nothing written, nothing to say"
        );
        let stdout = RunEvent::Output {
            stream: OutputStream::Stdout,
            line: "not json".into(),
        };
        assert_eq!(tail.take(stdout.clone()), Some(stdout));
        for i in 0..30 {
            assert_eq!(tail.take(stderr(&format!("line {i}"))), None);
        }
        assert_eq!(tail.take(stderr(&"x".repeat(100_000))), None);
        let succeeded = RunOutcome {
            success: true,
            ..RunOutcome::default()
        };
        assert!(
            tail.note_for(&succeeded).is_none(),
            "a run that worked needs no explaining"
        );
        let Some(RunEvent::Event(note)) = tail.note_for(&failed) else {
            panic!("a failure note");
        };
        assert!(
            note.message
                .starts_with("OpenCode's last lines on stderr:\nline 11\n")
        );
        assert!(!note.message.contains("line 10\n"));
        assert!(
            note.message.len() < 20 * (LINE_BYTES + 10),
            "{}",
            note.message.len()
        );
    }
}
