//! The hard cap: Letta accepts values longer than a block's limit, so Handoff makes sure it
//! never sends one. Events go first (oldest first, counted by the pruned marker), then the
//! outputs list, the evaluator's detail, pending questions, and finally the summary shrinks.

use serde_json::json;

use super::{WorkspaceValue, clip_chars};

/// The serialized value, at most `limit` characters long (`limit` ≥ the configured minimum).
pub fn fit_value(mut value: WorkspaceValue, limit: usize) -> String {
    loop {
        let text = render(&value);
        if text.chars().count() <= limit {
            return text;
        }
        if value.prune_oldest() {
            continue;
        }
        if value.artifacts_index.pop().is_some() {
            continue;
        }
        if value.evaluator.take().is_some() {
            continue;
        }
        if value.pending_input.len() > 1 {
            value.pending_input.truncate(1);
            continue;
        }
        if value.pending_input.pop().is_some() {
            continue;
        }
        let chars = value.summary.chars().count();
        if chars > 40 {
            value.summary = clip_chars(&value.summary, chars / 2);
            continue;
        }
        return minimal(&value, limit);
    }
}

fn render(value: &WorkspaceValue) -> String {
    // Serializing plain strings, numbers and lists cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// The last resort for a limit too small for anything else.
fn minimal(value: &WorkspaceValue, limit: usize) -> String {
    let text = json!({
        "version": value.version,
        "task_id": value.task_id,
        "status": value.status,
        "updated_at": value.updated_at,
    })
    .to_string();
    if text.chars().count() <= limit {
        text
    } else {
        json!({ "task_id": value.task_id }).to_string()
    }
}
