//! Which events a person reads: one line per tool call, no permission request the policy
//! allowed without asking anyone, and no single model call (the task's usage line sums them). Every surface that shows a task's events to people (the CLI's
//! live view and `logs`, the dashboard, Matrix, the Letta block) applies the same rule; the
//! history keeps every event for audit and machines.

use std::collections::HashSet;

use serde_json::Value;

use crate::EventKind;

/// Picks the events worth a line, in order: a tool call gets its first step that says what it
/// works on (or its end, if none did), and its failure if it fails; a request the policy
/// answered `allow` by itself gets none. Remembers the calls already told.
#[derive(Debug, Default, Clone)]
pub struct EventLines {
    /// Tool calls that got their line.
    told: HashSet<String>,
}

impl EventLines {
    /// Whether the event of `kind` with `data` gets a line.
    pub fn keep(&mut self, kind: EventKind, data: &Value) -> bool {
        let field = |key: &str| data.get(key).and_then(Value::as_str);
        match kind {
            EventKind::Tool => {
                let status = field("status");
                let Some(call) = field("call_id") else {
                    return status != Some("pending");
                };
                if self.told.contains(call) {
                    return matches!(status, Some("error" | "failed"));
                }
                let ended = matches!(status, Some("completed" | "error" | "failed" | "cancelled"));
                if ended || (status != Some("pending") && says_what(data)) {
                    self.told.insert(call.to_owned());
                    return true;
                }
                false
            }
            // One per model call: the task's usage line says what they add up to.
            EventKind::Model => false,
            EventKind::Input => {
                !(field("state") == Some("answered")
                    && field("decision") == Some("allow")
                    && field("by").is_some_and(|by| by.starts_with("policy")))
            }
            _ => true,
        }
    }
}

/// Whether a tool event says what the call works on (a title, or its input).
fn says_what(data: &Value) -> bool {
    let title = data.get("title").and_then(Value::as_str);
    let input = data.get("input").and_then(Value::as_object);
    title.is_some_and(|t| !t.is_empty()) || input.is_some_and(|i| !i.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_line_per_tool_call_and_none_for_a_policy_allow() {
        let tool = |call: &str, status: &str, input: Value| json!({"call_id": call, "status": status, "input": input});
        let command = json!({"command": "cargo test"});
        let none = json!({});
        let mut lines = EventLines::default();
        let kept: Vec<bool> = [
            tool("a", "pending", command.clone()),
            tool("a", "running", command.clone()),
            tool("a", "completed", command.clone()),
            // A step that does not say what it works on waits for one that does, or the end.
            tool("b", "running", none.clone()),
            tool("b", "completed", json!({"filePath": "a.txt"})),
            tool("c", "running", command),
            tool("c", "error", none.clone()),
            json!({"status": "running"}),
            json!({"status": "pending"}),
        ]
        .iter()
        .map(|data| lines.keep(EventKind::Tool, data))
        .collect();
        assert_eq!(
            kept,
            [false, true, false, false, true, true, true, true, false]
        );
        let answered =
            |decision: &str, by: &str| json!({"state": "answered", "decision": decision, "by": by});
        assert!(!lines.keep(EventKind::Input, &answered("allow", "policy (rules)")));
        assert!(lines.keep(EventKind::Input, &answered("deny", "policy (rules)")));
        assert!(lines.keep(EventKind::Input, &answered("allow", "agent-a")));
        assert!(lines.keep(EventKind::Input, &json!({"state": "pending"})));
        assert!(lines.keep(EventKind::Text, &json!({})));
    }
}
