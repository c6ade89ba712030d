//! The room's messages, as plain lines (escaped into HTML by [`crate::html::notice`]): the
//! task started, its status changed, what it did since the last message, a request waiting,
//! and the outcome with the diff stat and the agent's answer.

use handoff_integration::PendingRequest;
use handoff_task::{EventKind, EventLines, FileStat, Task, TaskEvent, TaskStatus};

use crate::{
    TaskView,
    html::{clip, one_line},
};

/// Event lines in one progress message at most (the rest are counted).
pub const EVENT_LINES: usize = 8;
/// Characters of one event line.
const EVENT_CHARS: usize = 200;
/// Characters of the description in the first message.
const DESCRIPTION_CHARS: usize = 2_000;
/// Characters of the answer in the outcome.
const ANSWER_CHARS: usize = 3_000;

/// The room's name.
pub fn room_name(task: &Task) -> String {
    format!("Handoff {}: {}", task.id, one_line(&task.description, 60))
}

/// The room's topic.
pub fn room_topic(task: &Task) -> String {
    format!(
        "Task {} of {} ({}): {}",
        task.id,
        task.agent_id,
        task.executor,
        one_line(&task.description, 300)
    )
}

/// The first message.
pub fn started(task: &Task, may_steer: bool) -> Vec<String> {
    let mut lines = vec![
        format!("Task {} ({}) for {}", task.id, task.executor, task.agent_id),
        clip(&task.description, DESCRIPTION_CHARS),
    ];
    if may_steer {
        lines.push(crate::command::HELP.to_owned());
    }
    lines
}

/// A status change.
pub fn status(task: &Task) -> Vec<String> {
    let mut lines = vec![format!("Task {} is {}", task.id, task.status)];
    if let Some(error) = &task.error {
        lines.push(one_line(error, 500));
    }
    lines
}

/// What happened since `after` (an event seq), at most [`EVENT_LINES`] lines.
pub fn progress(task: &Task, events: &[TaskEvent], after: i64) -> Option<Vec<String>> {
    // The rule runs over the earlier events too, so a tool call told before `after` is not
    // told again.
    let mut lines = EventLines::default();
    let new: Vec<&TaskEvent> = events
        .iter()
        .filter(|e| lines.keep(e.kind, &e.data) && e.seq > after && worth_showing(e.kind))
        .collect();
    if new.is_empty() {
        return None;
    }
    let skipped = new.len().saturating_sub(EVENT_LINES);
    let mut lines = vec![format!(
        "Task {}: {} new",
        task.id,
        plural(new.len(), "event")
    )];
    if skipped > 0 {
        lines.push(format!("({skipped} earlier not shown)"));
    }
    lines.extend(
        new[skipped..]
            .iter()
            .map(|e| format!("{}: {}", e.kind, one_line(&e.message, EVENT_CHARS))),
    );
    Some(lines)
}

/// Status changes are posted at once on their own; Handoff's own log lines are noise here.
fn worth_showing(kind: EventKind) -> bool {
    !matches!(
        kind,
        EventKind::Status | EventKind::Log | EventKind::Input | EventKind::Model
    )
}

/// A request waiting for an answer, with the commands that answer it.
pub fn pending(task: &Task, request: &PendingRequest) -> Vec<String> {
    vec![
        format!(
            "Task {} asks ({}): {}",
            task.id,
            request.kind,
            one_line(&request.title, 300)
        ),
        format!(
            "Answer with: !approve {id} [once|task|project] — or — !deny {id}",
            id = request.id
        ),
    ]
}

/// The final message.
pub fn outcome(view: &TaskView) -> Vec<String> {
    let task = &view.task;
    let mut lines = vec![format!("Task {} {}", task.id, ended(task.status))];
    if let Some(error) = &task.error {
        lines.push(format!("Error: {}", one_line(error, 500)));
    }
    lines.push(format!(
        "Changes: {}",
        view.diff_stat
            .as_deref()
            .and_then(changes)
            .unwrap_or_else(|| "none".to_owned())
    ));
    match &view.answer {
        Some(answer) => lines.push(format!("Answer: {}", clip(answer, ANSWER_CHARS))),
        None => lines.push("The agent gave no final answer.".to_owned()),
    }
    lines
}

fn ended(status: TaskStatus) -> String {
    match status {
        TaskStatus::Completed => "completed".to_owned(),
        other => format!("ended: {other}"),
    }
}

/// `N files changed, +A -D (path +a -d, …)`, or `None` when nothing changed.
pub fn changes(files: &[FileStat]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let added: u64 = files.iter().map(|f| f.added).sum();
    let removed: u64 = files.iter().map(|f| f.removed).sum();
    let shown: Vec<String> = files
        .iter()
        .take(10)
        .map(|f| format!("{} +{} -{}", one_line(&f.path, 120), f.added, f.removed))
        .collect();
    let more = files.len().saturating_sub(10);
    let tail = if more > 0 {
        format!(", {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "{} changed, +{added} -{removed} ({}{tail})",
        plural(files.len(), "file"),
        shown.join(", ")
    ))
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use handoff_task::diff_stat;

    use super::*;

    #[test]
    fn the_diff_stat_counts_lines_per_file() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,3 @@\n ctx\n-old\n+new\n+more\ndiff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+hello\n";
        assert_eq!(
            changes(&diff_stat(diff)).unwrap(),
            "2 files changed, +3 -1 (src/a.rs +2 -1, b.txt +1 -0)"
        );
        assert_eq!(changes(&diff_stat("")), None);
    }
}
