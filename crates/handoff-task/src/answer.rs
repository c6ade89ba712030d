//! The executor agent's final answer, read from a run's last events.

use crate::{EventKind, TaskEvent};

/// The agent's last run of text, after its last tool call (`None`: it wrote no text).
pub fn closing_answer(events: &[TaskEvent]) -> Option<String> {
    let last = events.iter().rposition(|e| e.kind == EventKind::Text)?;
    let start = events[..last]
        .iter()
        .rposition(|e| e.kind == EventKind::Tool)
        .map_or(0, |i| i + 1);
    let parts: Vec<&str> = events[start..=last]
        .iter()
        .filter(|e| e.kind == EventKind::Text)
        .map(|e| e.message.as_str())
        .collect();
    Some(parts.join("\n"))
}
