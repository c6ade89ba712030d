//! One task's texts: a submission, a status, a control and a message.

use std::time::Duration;

use handoff_protocol::{
    EventKind, EventView, TaskStatus,
    tasks::{
        ControlAction, ExecuteTaskOutput, GetTaskStatusOutput, PendingInputView,
        SendTaskControlOutput, SendTaskMessageOutput,
    },
};
use serde_json::{Value, json};

use super::{Glance, Outlook, headline, next_step, title};
use crate::wording::{call, capitalized, duration, line, passage};

/// Characters of the executor agent's closing text shown.
const ANSWER_CHARS: usize = 600;
/// Output lines shown from a finished run.
const TAIL_LINES: usize = 5;
/// Pending requests listed.
const PENDING_SHOWN: usize = 5;

/// `execute_task`: the task's state, then what comes next — or, once it ended (`sync`), its
/// outcome. `waited` is how long a `sync` call waited.
pub(crate) fn execute(
    out: &ExecuteTaskOutput,
    outlook: &Outlook,
    waited: Option<Duration>,
) -> String {
    let mut lines = vec![headline(&Glance::of_submission(out))];
    if !out.created {
        lines.push(
            "It is the task an earlier submission with this idempotency_key created; nothing new \
             was queued."
                .to_owned(),
        );
    }
    if out.status.is_terminal() {
        lines.extend(ending(outlook.answer.as_deref(), &out.output_tail));
    } else {
        if let Some(waited) = waited {
            lines.push(format!(
                "Still under way after waiting {} for it.",
                duration(i64::try_from(waited.as_millis()).unwrap_or(i64::MAX))
            ));
        }
        lines.push(format!("Working directory: {}", out.workdir));
    }
    lines.push(next_step(&out.task_id, out.status, &outlook.follow_up));
    lines.join("\n")
}

/// `get_task_status`: where the task stands, its latest step, and what to do.
pub(crate) fn status(out: &GetTaskStatusOutput, outlook: &Outlook) -> String {
    let task = &out.task;
    let mut first = headline(&Glance::of_view(task, out.queue_position));
    if !task.status.is_terminal()
        && let Some(latest) = latest(&out.recent_events)
    {
        first.push_str(&format!(" Latest: {latest}"));
    }
    let mut lines = vec![first, format!("Task: {}", title(&task.description))];
    lines.extend(out.completion.as_ref().map(evaluator));
    lines.extend(
        out.model_usage
            .as_ref()
            .map(|usage| format!("Model usage: {}", usage.summary())),
    );
    if task.status.is_terminal() {
        lines.extend(ending(outlook.answer.as_deref(), &[]));
    }
    if task.status == TaskStatus::InputRequired && !out.pending_input.is_empty() {
        lines.extend(pending(&task.task_id, &out.pending_input));
    } else {
        lines.push(next_step(&task.task_id, task.status, &outlook.follow_up));
    }
    lines.join("\n")
}

/// `send_task_control`: what the control did.
pub(crate) fn control(
    out: &SendTaskControlOutput,
    action: ControlAction,
    outlook: &Outlook,
) -> String {
    let id = &out.task_id;
    let status = out.status;
    let first = match (action, out.changed, status) {
        (ControlAction::Cancel, _, TaskStatus::Cancelled) => {
            format!("Task {id} was cancelled; its executor is stopped.")
        }
        (ControlAction::Cancel, true, s) if !s.is_terminal() => {
            format!("Cancel accepted: task {id} is still {s} while its run stops.")
        }
        (ControlAction::Cancel, _, s) if s.is_terminal() => {
            format!("Nothing to cancel: task {id} had already ended as {s}.")
        }
        (ControlAction::Pause, true, TaskStatus::Paused) => {
            format!("Task {id} is paused; it keeps its slot.")
        }
        (ControlAction::Resume, true, TaskStatus::Running) => {
            format!("Task {id} is running again.")
        }
        (_, false, s) => format!(
            "Nothing changed: task {id} is {s} ({}).",
            line(&out.message, 200)
        ),
        (_, true, s) => format!("Task {id} is {s}: {}.", line(&out.message, 200)),
    };
    [first, next_step(id, status, &outlook.follow_up)].join("\n")
}

/// `send_task_message`: whether the executor has the message, and what to do next.
pub(crate) fn message(out: &SendTaskMessageOutput, outlook: &Outlook) -> String {
    let (id, seq) = (&out.task_id, out.event_seq);
    let first = if out.delivered {
        format!("Task {id} got your message (event #{seq} of its history).")
    } else {
        format!("Your message is recorded as event #{seq} of task {id}; not delivered yet.")
    };
    let note = format!("{}.", capitalized(&line(&out.note, 300)));
    [first, note, next_step(id, out.status, &outlook.follow_up)].join("\n")
}

/// What a finished task came to: the executor agent's closing text and its last output.
fn ending(answer: Option<&str>, output_tail: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(answer) = answer.filter(|a| !a.trim().is_empty()) {
        lines.push(format!("Answer: {}", passage(answer, 12, ANSWER_CHARS)));
    }
    let tail: Vec<String> = output_tail
        .iter()
        .skip(output_tail.len().saturating_sub(TAIL_LINES))
        .map(|l| format!("  {}", line(l, 160)))
        .collect();
    if !tail.is_empty() {
        lines.push(format!("Last output:\n{}", tail.join("\n")));
    }
    lines
}

/// The latest step worth naming (state changes and Handoff's own notes say nothing new).
fn latest(events: &[EventView]) -> Option<String> {
    let event = events
        .iter()
        .rev()
        .find(|e| !matches!(e.kind, EventKind::Status | EventKind::Log))?;
    let message = line(&event.message, 160);
    let stop = if message.ends_with(['.', '!', '?', '…']) {
        ""
    } else {
        "."
    };
    Some(format!("{}: {message}{stop}", event.kind.as_str()))
}

/// The completion evaluator's word: `Evaluator: not_done after 2 cycles: tests fail.`
fn evaluator(completion: &Value) -> String {
    let status = completion["status"].as_str().unwrap_or("unknown");
    let cycles = completion["cycles"].as_u64().map_or_else(String::new, |n| {
        format!(" after {n} cycle{}", if n == 1 { "" } else { "s" })
    });
    let reason = completion["reason"].as_str().map_or_else(String::new, |r| {
        let reason = line(r, 240);
        let stop = if reason.ends_with(['.', '!', '?', '…']) {
            ""
        } else {
            "."
        };
        format!(": {reason}{stop}")
    });
    let remaining: Vec<String> = completion["remaining"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .take(3)
        .map(|r| line(r, 80))
        .collect();
    let remaining = if remaining.is_empty() {
        String::new()
    } else {
        format!(" Remaining: {}.", remaining.join("; "))
    };
    format!("Evaluator: {status}{cycles}{reason}{remaining}")
}

/// The executor's pending requests and how to answer them.
fn pending(id: &str, requests: &[PendingInputView]) -> Vec<String> {
    let mut lines = vec!["It asks (oldest first):".to_owned()];
    for request in requests.iter().take(PENDING_SHOWN) {
        let subject = if request.patterns.is_empty() {
            String::new()
        } else {
            format!(" `{}`", line(&request.patterns.join(" "), 120))
        };
        let what = if request.kind == request.permission {
            request.kind.clone()
        } else {
            format!("{} {}", request.kind, request.permission)
        };
        lines.push(format!(
            "- [{}] {what}{subject}: {}",
            request.request_id,
            line(&request.title, 160)
        ));
    }
    if requests.len() > PENDING_SHOWN {
        lines.push(format!("- and {} more", requests.len() - PENDING_SHOWN));
    }
    let allow = call(
        "send_task_message",
        json!({ "task_id": id, "message_type": "approval", "message": "allow" }),
    );
    lines.push(format!(
        "Answer the oldest with {allow} (or \"deny\"). To pick a request or answer a question, \
         the message is JSON: {{\"decision\":\"allow\",\"request_id\":\"…\",\"message\":\"your \
         answer\"}}."
    ));
    lines
}
