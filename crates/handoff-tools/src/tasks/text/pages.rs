//! Paged texts: a list of tasks and a page of one task's history. Each shows a bounded number
//! of lines and says how to get the rest, so a client that reads only text can page too.

use handoff_protocol::{
    ArtifactKind, TaskStatus, TaskView,
    tasks::{ArtifactView, GetTaskHistoryOutput, ListTasksOutput},
};
use serde_json::{Map, Value, json};

use super::{Glance, headline, title};
use crate::wording::{call, count, duration, head_bytes, line, size, tail_bytes};

/// Tasks listed at most.
const TASKS_SHOWN: usize = 20;
/// Events listed at most.
const EVENTS_SHOWN: usize = 25;
/// Bytes of each stored output shown.
const ARTIFACT_BYTES: usize = 800;

/// `list_tasks`: one line per task, newest first. `seqs` are the listed tasks' queue numbers
/// (a cursor resumes after one), `status` the filter asked for.
pub(crate) fn task_list(
    out: &ListTasksOutput,
    seqs: &[i64],
    status: Option<TaskStatus>,
    text: Option<&str>,
) -> String {
    let (one, many) = match status {
        Some(s) => (format!("{s} task"), format!("{s} tasks")),
        None => ("task".to_owned(), "tasks".to_owned()),
    };
    if out.tasks.is_empty() {
        return format!("No {many} to list.");
    }
    let shown = out.tasks.len().min(TASKS_SHOWN);
    let mut lines = vec![format!(
        "{}, newest first:",
        count(out.tasks.len(), &one, &many)
    )];
    lines.extend(out.tasks.iter().take(shown).map(task_line));
    let mut page = Map::new();
    if let Some(s) = status {
        page.insert("status".into(), json!(s));
    }
    // The next page is of the same filter.
    if let Some(text) = text {
        page.insert("text".into(), json!(text));
    }
    let resume = if shown < out.tasks.len() {
        lines.push(format!(
            "Showing the newest {shown} of the {} on this page.",
            out.tasks.len()
        ));
        page.insert("limit".into(), json!(shown));
        seqs.get(shown - 1).map(|seq| format!("c{seq}"))
    } else {
        out.next_cursor.clone()
    };
    match resume {
        Some(cursor) => {
            page.insert("cursor".into(), json!(cursor));
            lines.push(format!(
                "Older ones: {}.",
                call("list_tasks", Value::Object(page))
            ));
        }
        None => lines.push("No older ones.".to_owned()),
    }
    lines.push(format!(
        "One task's details: {}.",
        call(
            "get_task_status",
            json!({ "task_id": out.tasks[0].task_id })
        )
    ));
    lines.join("\n")
}

/// `- task_… failed (opencode, 1m 05s): Fix the test — exit code 1`
fn task_line(task: &TaskView) -> String {
    let took = task
        .duration_ms
        .map_or_else(String::new, |ms| format!(", {}", duration(ms)));
    let why = match (&task.error, task.status) {
        (Some(error), TaskStatus::Failed | TaskStatus::Timeout) => {
            format!(" — {}", line(error, 80))
        }
        _ => String::new(),
    };
    format!(
        "- {} {} ({}{took}): {}{why}",
        task.task_id,
        task.status,
        task.executor,
        line(&task.description, 80)
    )
}

/// `get_task_history`: the task, a page of its events, where the next page starts, and the
/// stored outputs when asked for.
pub(crate) fn history(out: &GetTaskHistoryOutput) -> String {
    let id = &out.task.task_id;
    let shown = out.events.len().min(EVENTS_SHOWN);
    let first = out.events_offset + 1;
    let last = out.events_offset + shown as u64;
    let range = if shown == 0 {
        format!(
            "No events at offset {} of {}.",
            out.events_offset, out.total_events
        )
    } else {
        format!("Events {first}–{last} of {}:", out.total_events)
    };
    let mut lines = vec![
        headline(&Glance::of_view(&out.task, None)),
        format!("Task: {}", title(&out.task.description)),
        range,
    ];
    lines.extend(
        out.events
            .iter()
            .take(shown)
            .map(|e| format!("#{} {}: {}", e.seq, e.kind.as_str(), line(&e.message, 200))),
    );
    if last < out.total_events && shown > 0 {
        let next = call(
            "get_task_history",
            json!({ "task_id": id, "events_offset": last, "events_limit": EVENTS_SHOWN }),
        );
        lines.push(format!("Next events: {next}."));
    } else if shown > 0 {
        lines.push("That is the latest event.".to_owned());
    }
    match &out.artifacts {
        Some(artifacts) => lines.extend(artifact_lines(artifacts)),
        None if out.task.status.is_terminal() => lines.push(
            "Its stored output, log and diff: the same call with \"include_artifacts\":true."
                .to_owned(),
        ),
        None => {}
    }
    lines.join("\n")
}

/// Each stored output: its size, and the part that matters (the end of output and log, the
/// start of a diff).
fn artifact_lines(artifacts: &[ArtifactView]) -> Vec<String> {
    if artifacts.is_empty() {
        return vec!["No stored outputs.".to_owned()];
    }
    let mut lines = Vec::new();
    for artifact in artifacts {
        let capped = if artifact.capped {
            " (capped: the executor produced more)"
        } else {
            ""
        };
        let content = artifact.content.trim_end();
        let (part, excerpt) = match artifact.kind {
            ArtifactKind::Diff => ("start", head_bytes(content, ARTIFACT_BYTES)),
            _ => ("end", tail_bytes(content, ARTIFACT_BYTES)),
        };
        let whole = excerpt.len() == content.len() && !artifact.truncated;
        let label = if whole { "in full" } else { part };
        lines.push(format!(
            "Stored {} ({}{capped}), {label}:\n{excerpt}",
            artifact.kind,
            size(artifact.size)
        ));
    }
    lines
}

/// `get_task_history` with `artifact`: where the part lies in the whole stored output, the
/// part itself, and the call for the next part.
pub(crate) fn artifact_part(out: &GetTaskHistoryOutput, kind: ArtifactKind) -> String {
    let id = &out.task.task_id;
    let Some(part) = out.artifacts.as_ref().and_then(|a| a.first()) else {
        let when = if out.task.status.is_terminal() {
            ""
        } else {
            " yet (outputs are kept when the task ends)"
        };
        return format!("Task {id} has no stored {kind}{when}.");
    };
    let start = part.offset.unwrap_or(0);
    let capped = if part.capped {
        " (capped: the executor produced more)"
    } else {
        ""
    };
    let range = match part.next_offset {
        Some(next) => format!("bytes {start}–{next}"),
        None => format!("from byte {start} to the end"),
    };
    let mut text = format!(
        "Task {id}, stored {kind} of {}{capped}, {range}:\n{}",
        size(part.size),
        part.content
    );
    if !text.ends_with('\n') {
        text.push('\n');
    }
    match part.next_offset {
        Some(next) => text.push_str(&format!(
            "Next part: {}.",
            call(
                "get_task_history",
                json!({"task_id": id, "artifact": kind, "artifact_offset": next})
            )
        )),
        None => text.push_str(&format!("That is the end of the stored {kind}.")),
    }
    text
}
