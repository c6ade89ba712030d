//! `{{capture:REGEX}}`: a value the model read earlier in its own conversation, such as the id
//! a tool result gave it, so a scripted turn can use it the way a real model would (call
//! `get_task_status` with the task id `execute_task` just returned).
//!
//! The placeholder is replaced by the first capture group (or the whole match) of the **last**
//! match of REGEX in the request: strings are searched from the end of the request backwards,
//! so the most recent tool result wins. A REGEX that does not compile or does not match leaves
//! the placeholder as it is, so the call visibly carries it and the test that relied on it fails.

use regex::Regex;
use serde_json::Value;

use crate::cwd::{collect_strings, map_strings};
use crate::script::Turn;

const OPEN: &str = "{{capture:";
const CLOSE: &str = "}}";

/// `turn` with every `{{capture:…}}` in its text and tool call arguments resolved against `body`.
pub(crate) fn resolve_turn(turn: &Turn, body: &Value) -> Turn {
    let has_placeholder = turn.text.as_deref().is_some_and(|t| t.contains(OPEN))
        || turn.until_file.as_deref().is_some_and(|t| t.contains(OPEN))
        || turn
            .tool_calls
            .iter()
            .any(|c| c.arguments.to_string().contains(OPEN));
    if !has_placeholder {
        return turn.clone();
    }
    let mut strings = Vec::new();
    collect_strings(body, &mut strings);
    let mut resolved = turn.clone();
    resolved.text = turn.text.as_deref().map(|t| substitute(t, &strings));
    resolved.until_file = turn.until_file.as_deref().map(|t| substitute(t, &strings));
    for call in &mut resolved.tool_calls {
        call.arguments = map_strings(&call.arguments, &|s| substitute(s, &strings));
    }
    resolved
}

/// `text` with each placeholder replaced by its capture (unchanged where nothing matched).
fn substitute(text: &str, strings: &[&str]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find(CLOSE) else { break };
        let pattern = &after[..end];
        out.push_str(&rest[..start]);
        match last_capture(pattern, strings) {
            Some(found) => out.push_str(&found),
            None => out.push_str(&rest[start..start + OPEN.len() + end + CLOSE.len()]),
        }
        rest = &after[end + CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

fn last_capture(pattern: &str, strings: &[&str]) -> Option<String> {
    let regex = Regex::new(pattern).ok()?;
    strings.iter().rev().find_map(|s| {
        let caps = regex.captures_iter(s).last()?;
        caps.get(1)
            .or_else(|| caps.get(0))
            .map(|m| m.as_str().to_owned())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::script::Turn;

    #[test]
    fn the_latest_match_in_the_conversation_fills_the_arguments() {
        let turn = Turn::tool_call(
            "get_task_status",
            json!({"task_id": "{{capture:Task (task_[a-z0-9]+)}}", "n": 1}),
        );
        let body = json!({"messages": [
            {"role": "tool", "content": "Task task_old queued."},
            {"role": "user", "content": "and again"},
            {"role": "tool", "content": "Task task_abc1 queued. Task task_new2 queued."}
        ]});
        let resolved = resolve_turn(&turn, &body);
        assert_eq!(
            resolved.tool_calls[0].arguments,
            json!({"task_id": "task_new2", "n": 1})
        );
    }

    #[test]
    fn no_match_leaves_the_placeholder_visible() {
        let turn = Turn::text("id: {{capture:nothing-like-this}} and {{capture:(}}");
        let resolved = resolve_turn(&turn, &json!({"messages": []}));
        assert_eq!(
            resolved.text.as_deref(),
            Some("id: {{capture:nothing-like-this}} and {{capture:(}}")
        );
    }
}
