//! The one message an agent gets when its task ends: the task id, how it ended, how long it
//! took, a preview of at most 1 KiB, and how to read the rest. Never the whole description or
//! output — those stay in Handoff.

use handoff_task::{EventKind, TaskId};

use crate::{
    TaskSnapshot,
    block::{clip_bytes, clip_chars, duration_text},
};

/// Bytes of output or summary previewed.
pub const PREVIEW_BYTES: usize = 1024;
/// Characters of the task's description shown as its title.
const TITLE_CHARS: usize = 120;
/// Output lines gathered for a preview when the agent wrote no closing text.
const PREVIEW_LINES: usize = 12;

/// A completion notification, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The message text.
    pub text: String,
    /// The key Letta stores with it, so Handoff can tell whether it already arrived.
    pub otid: String,
}

/// The offline threading id of a task's completion message: the same on every attempt and
/// after restarts, so a message that arrived without Handoff hearing so is recognised.
pub fn notice_otid(task: &TaskId) -> String {
    format!("handoff-done-{task}")
}

impl Notice {
    /// The notification for a finished task.
    pub fn for_task(s: &TaskSnapshot, block_label: Option<&str>) -> Self {
        let task = &s.task;
        let took = match (task.started_at, task.completed_at) {
            (Some(start), Some(end)) => format!(" after {}", duration_text(end - start)),
            _ => String::new(),
        };
        let title = task
            .description
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("(no description)");
        let mut text = format!(
            "[Handoff] Task {} {}{took}.\nTask: {}\n",
            task.id,
            task.status.as_str(),
            clip_chars(title, TITLE_CHARS)
        );
        let preview = preview(s);
        if !preview.is_empty() {
            text.push_str(&format!(
                "Preview (at most {PREVIEW_BYTES} bytes):\n{}\n",
                clip_bytes(&preview, PREVIEW_BYTES)
            ));
        }
        text.push_str(&format!(
            "The rest: call get_task_history {{\"task_id\": \"{id}\"}} for every event and the full \
             output, get_task_files / read_task_file for the files it changed",
            id = task.id
        ));
        if let Some(label) = block_label {
            text.push_str(&format!(
                "; your memory block {label} shows the final state"
            ));
        }
        text.push('.');
        Self {
            text,
            otid: notice_otid(&task.id),
        }
    }
}

/// What the task came to: its error, the evaluator's word, the agent's closing text, or the
/// last lines it printed.
fn preview(s: &TaskSnapshot) -> String {
    let mut parts = Vec::new();
    if let Some(error) = &s.task.error {
        parts.push(format!("Error: {error}"));
    }
    if let Some(reason) = s
        .completion
        .as_ref()
        .and_then(|c| c.get("reason"))
        .and_then(|r| r.as_str())
    {
        parts.push(format!("Evaluator: {reason}"));
    }
    let closing = s
        .recent_events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::Text)
        .map(|e| e.message.clone());
    match closing {
        Some(text) => parts.push(text),
        None => {
            let mut lines: Vec<&str> = s
                .recent_events
                .iter()
                .rev()
                .filter(|e| e.kind == EventKind::Output)
                .take(PREVIEW_LINES)
                .map(|e| e.message.as_str())
                .collect();
            lines.reverse();
            if !lines.is_empty() {
                parts.push(lines.join("\n"));
            }
        }
    }
    parts.join("\n")
}
