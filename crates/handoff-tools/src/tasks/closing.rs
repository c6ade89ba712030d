//! How a finished task ended, read from its last events: the executor agent's closing text
//! and the last lines it printed.

use handoff_engine::{CLOSING_EVENTS, Engine, EngineError};
use handoff_protocol::{EVENT_MESSAGE_CHARS, clip};
use handoff_task::{EventKind, Principal, TaskEvent, TaskId, closing_answer};

/// Output lines a finished run returns.
pub(super) const OUTPUT_TAIL_LINES: u32 = 20;

// Output lines and the closing text sit just before the final status event; a window a bit
// larger than the tail covers the few lifecycle events after them.
const _: () = assert!(CLOSING_EVENTS >= OUTPUT_TAIL_LINES + 10);

/// The end of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Closing {
    /// What the executor agent wrote last (its final answer), when it wrote text at all.
    pub answer: Option<String>,
    /// The last output lines, oldest first.
    pub output_tail: Vec<String>,
    /// How the round's branch was delivered (the last delivery event's `data.delivery`).
    pub delivery: Option<serde_json::Value>,
}

/// Reads how task `id` ended.
pub(super) async fn closing(
    engine: &Engine,
    agent: &Principal,
    id: &TaskId,
) -> Result<Closing, EngineError> {
    let events = engine.recent_events(agent, id, CLOSING_EVENTS).await?;
    Ok(closing_of(&events))
}

/// How a run ended, from its last [`CLOSING_EVENTS`] events.
pub(super) fn closing_of(events: &[TaskEvent]) -> Closing {
    Closing {
        answer: closing_answer(events),
        output_tail: output_tail(events),
        delivery: events
            .iter()
            .rev()
            .find_map(|e| e.data.get("delivery"))
            .cloned(),
    }
}

/// A tool call event as one line of what the agent is doing now.
pub(crate) fn tool_call_line(event: &TaskEvent) -> String {
    clip(&event.message, LAST_TOOL_CALL_CHARS)
}

/// Longest tool call shown as what the agent is doing (a progress line stays one line).
const LAST_TOOL_CALL_CHARS: usize = 200;

/// The last output lines; one output event may hold several.
fn output_tail(events: &[TaskEvent]) -> Vec<String> {
    let mut lines: Vec<String> = events
        .iter()
        .filter(|e| e.kind == EventKind::Output)
        .flat_map(|e| e.message.split('\n'))
        .map(|line| clip(line, EVENT_MESSAGE_CHARS))
        .collect();
    let skip = lines.len().saturating_sub(OUTPUT_TAIL_LINES as usize);
    lines.drain(..skip);
    lines
}

#[cfg(test)]
mod tests {
    use handoff_task::TaskId;

    use super::*;

    fn event(seq: i64, kind: EventKind, message: &str) -> TaskEvent {
        TaskEvent {
            task_id: TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap(),
            seq,
            at: seq,
            kind,
            message: message.to_owned(),
            data: serde_json::Value::Null,
        }
    }

    #[test]
    fn the_answer_is_the_text_after_the_last_tool_call() {
        let events = [
            event(1, EventKind::Text, "Let me look."),
            event(2, EventKind::Tool, "bash: cargo test"),
            event(3, EventKind::Text, "All tests pass."),
            event(4, EventKind::Text, "I fixed src/lib.rs."),
            event(5, EventKind::Status, "running → completed"),
        ];
        assert_eq!(
            closing_answer(&events).as_deref(),
            Some("All tests pass.\nI fixed src/lib.rs.")
        );
        assert_eq!(closing_answer(&events[1..2]), None);
    }

    #[test]
    fn a_tool_call_line_is_clipped_to_one_line() {
        let call = event(3, EventKind::Tool, "edit: src/lib.rs");
        assert_eq!(tool_call_line(&call), "edit: src/lib.rs");
        let long = "x".repeat(500);
        assert_eq!(
            tool_call_line(&event(1, EventKind::Tool, &long)),
            format!("{}… [300 more bytes]", "x".repeat(LAST_TOOL_CALL_CHARS))
        );
    }

    #[test]
    fn the_output_tail_keeps_the_last_lines() {
        let many = (1..=25)
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        let events = [
            event(1, EventKind::Output, &many),
            event(2, EventKind::Status, "done"),
        ];
        let tail = output_tail(&events);
        assert_eq!(tail.len(), OUTPUT_TAIL_LINES as usize);
        assert_eq!(tail.first().map(String::as_str), Some("6"));
        assert_eq!(tail.last().map(String::as_str), Some("25"));
    }
}
