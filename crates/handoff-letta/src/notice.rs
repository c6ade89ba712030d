//! The one message an agent gets when its task ends: the task id, how it ended, how long it
//! took, a preview of at most 1 KiB, and how to read the rest. Never the whole description or
//! output — those stay in Handoff.

use handoff_integration::TaskOverview;
use handoff_task::{EventKind, TaskId};

use crate::block::{clip_bytes, duration_text, title};

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
    /// Its opening words, which name the task: a stored copy without the otid is still
    /// recognised by them.
    pub header: String,
}

/// The offline threading id of a task's completion message: the same on every attempt and
/// after restarts, so a message that arrived without Handoff hearing so is recognised.
pub fn notice_otid(task: &TaskId) -> String {
    format!("handoff-done-{task}")
}

impl Notice {
    /// The notification for a finished task.
    pub fn for_task(s: &TaskOverview, block_label: Option<&str>) -> Self {
        let task = &s.task;
        let took = match (task.started_at, task.completed_at) {
            (Some(start), Some(end)) => format!(" after {}", duration_text(end - start)),
            _ => String::new(),
        };
        let header = format!("[Handoff] Task {} ", task.id);
        let mut text = format!(
            "{header}{}{took}.\nTask: {}\n",
            task.status.as_str(),
            title(&task.description, TITLE_CHARS)
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
            header,
        }
    }
}

/// What the task came to: its error, the evaluator's word, the agent's closing text, or the
/// last lines it printed.
fn preview(s: &TaskOverview) -> String {
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
            // One output event may hold several lines.
            let mut lines: Vec<&str> = s
                .recent_events
                .iter()
                .rev()
                .filter(|e| e.kind == EventKind::Output)
                .flat_map(|e| e.message.rsplit('\n'))
                .take(PREVIEW_LINES)
                .collect();
            lines.reverse();
            if !lines.is_empty() {
                parts.push(lines.join("\n"));
            }
        }
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use handoff_task::{EventKind, TaskStatus};

    use super::*;
    use crate::fixtures::snapshot;

    #[test]
    fn a_notice_says_what_ended_and_where_the_rest_is() {
        let mut s = snapshot(TaskStatus::Completed, "Fix the failing test in repo X", 40);
        s.recent_events.last_mut().unwrap().kind = EventKind::Text;
        s.recent_events.last_mut().unwrap().message = "All tests pass now.".into();
        let n = Notice::for_task(&s, Some("handoff_task_abcdefghijklmnopqrstuvwxyz"));
        assert!(n.text.starts_with(
            "[Handoff] Task task_abcdefghijklmnopqrstuvwxyz completed after 12.4 s.\n"
        ));
        assert!(n.text.contains("Task: Fix the failing test in repo X\n"));
        assert!(n.text.contains("All tests pass now."));
        assert!(n.text.contains("get_task_history"));
        assert!(
            n.text
                .contains("handoff_task_abcdefghijklmnopqrstuvwxyz shows the final state")
        );
        assert_eq!(n.otid, notice_otid(&s.task.id));
    }

    #[test]
    fn a_notice_never_carries_the_whole_description_or_output() {
        let description = "d".repeat(1 << 20);
        let mut s = snapshot(TaskStatus::Failed, &description, 30);
        for e in &mut s.recent_events {
            e.message = "o".repeat(100_000);
        }
        s.task.error = Some("e".repeat(100_000));
        let n = Notice::for_task(&s, None);
        // Header, title, at most 1 KiB of preview and the pointer to the rest.
        assert!(n.text.len() < 2_048, "{}", n.text.len());
        assert!(n.text.contains("Preview (at most 1024 bytes)"));
        assert!(!n.text.contains(&"d".repeat(200)));
    }

    #[test]
    fn a_failed_task_previews_its_error_and_last_output() {
        let s = snapshot(TaskStatus::Failed, "build", 3);
        let n = Notice::for_task(&s, None);
        assert!(
            n.text
                .contains("[Handoff] Task task_abcdefghijklmnopqrstuvwxyz failed after")
        );
        assert!(n.text.contains("Error: exit code 1\nline 1:"));
        assert!(!n.text.contains("memory block"));
    }
}
