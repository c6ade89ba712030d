//! The executor's last turn read from its events, for cut-off detection: a turn starts after the
//! evaluator's (or manager's) latest verdict, since every continuation is preceded by one.

use std::collections::HashSet;

use handoff_completion::cutoff::TurnSignals;
use handoff_task::{EventKind, TaskEvent};
use serde_json::Value;

/// What the last turn in `events` (oldest first) showed.
pub(crate) fn signals(events: &[TaskEvent]) -> TurnSignals {
    let start = events
        .iter()
        .rposition(|e| e.kind == EventKind::Verdict)
        .map_or(0, |i| i + 1);
    let turn = &events[start..];
    let mut calls = HashSet::new();
    let mut anonymous = 0;
    let mut answer = Vec::new();
    let mut signals = TurnSignals::default();
    for event in turn {
        match event.kind {
            EventKind::Tool => {
                match event.data.get("call_id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => {
                        calls.insert(id.to_owned());
                    }
                    _ => anonymous += 1,
                }
                answer.clear();
            }
            EventKind::Text => answer.push(event.message.clone()),
            _ => {}
        }
        signals.model_turn |= matches!(event.kind, EventKind::Tool | EventKind::Text);
        if let Some(tokens) = event.data.get("tokens").filter(|t| t.is_object()) {
            signals.model_turn = true;
            // One model step finished: the turn's last one decides.
            signals.last_output_tokens = tokens.get("output").and_then(Value::as_u64);
            signals.finish_reason = event
                .data
                .get("reason")
                .or_else(|| event.data.get("finish_reason"))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    signals.tool_calls = calls.len() + anonymous;
    signals.final_answer = answer.join("\n");
    signals.in_progress = in_progress(events);
    signals
}

/// Items of the latest todo list still marked `in_progress`.
fn in_progress(events: &[TaskEvent]) -> Vec<String> {
    events
        .iter()
        .rev()
        .find_map(|e| e.data.get("todos").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter(|item| item["status"].as_str() == Some("in_progress"))
        .map(|item| item["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_task::TaskId;
    use serde_json::json;

    use super::*;

    fn event(kind: EventKind, message: &str, data: Value) -> TaskEvent {
        TaskEvent {
            task_id: TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap(),
            seq: 0,
            at: 0,
            kind,
            message: message.to_owned(),
            data,
        }
    }

    fn step(reason: &str, output: u64) -> TaskEvent {
        event(
            EventKind::Log,
            "model step finished",
            json!({"reason": reason, "tokens": {"input": 10, "output": output}}),
        )
    }

    /// The cut-off verdict on `events` for a task whose diff is not empty.
    fn cut_off(events: &[TaskEvent]) -> Option<String> {
        handoff_completion::cutoff::detect(&signals(events))
    }

    fn tool(id: &str, status: &str) -> TaskEvent {
        event(
            EventKind::Tool,
            "write",
            json!({"tool": "write", "call_id": id, "status": status}),
        )
    }

    #[test]
    fn only_the_turn_after_the_latest_verdict_counts() {
        let events = vec![
            tool("a", "running"),
            tool("a", "completed"),
            step("tool-calls", 30),
            event(EventKind::Text, "ok", json!({})),
            step("stop", 1),
            event(EventKind::Verdict, "continuing", json!({})),
            event(
                EventKind::Text,
                "I wrote both files and ran the tests.",
                json!({}),
            ),
            step("stop", 12),
        ];
        assert!(cut_off(&events[..5]).unwrap().contains("near-empty"));
        let last = signals(&events);
        assert_eq!(last.tool_calls, 0);
        assert_eq!(last.last_output_tokens, Some(12));
        assert_eq!(cut_off(&events), None);
    }

    #[test]
    fn finish_reason_length_and_in_progress_todos_are_read() {
        let events = vec![
            event(
                EventKind::Log,
                "todos",
                json!({"todos": [{"content": "write b.txt", "status": "in_progress"}]}),
            ),
            event(
                EventKind::Text,
                "Here is a long answer that stops mid",
                json!({}),
            ),
            step("length", 4096),
        ];
        let turn = signals(&events);
        assert_eq!(turn.finish_reason.as_deref(), Some("length"));
        assert_eq!(turn.in_progress, vec!["write b.txt".to_owned()]);
        assert!(cut_off(&events).unwrap().contains("length"));
    }
}
