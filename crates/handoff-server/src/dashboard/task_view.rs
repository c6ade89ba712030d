//! The HTML of one task's page: its summary (state, pending requests, controls, the
//! evaluator's verdict), its outcome (the agent's answer, verdicts, the diff) and its events.

use handoff_protocol::{
    EventKind, EventLines, EventView, TaskStatus,
    tasks::{ArtifactView, GetTaskStatusOutput, PendingInputView},
};
use maud::{Markup, html};
use serde_json::Value;

use super::{
    auth::Viewer,
    diff,
    views::{csrf_field, page, status_badge, task_href, took, when},
};

/// What a task produced, as far as it got.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// The agent's final answer: its stored output, else the last text it wrote.
    pub(crate) answer: Option<String>,
    /// The stored diff.
    pub(crate) diff: Option<ArtifactView>,
    /// The evaluator's verdict events.
    pub(crate) verdicts: Vec<EventView>,
}

/// The live summary: state, timing, pending requests with their buttons, the controls.
pub(crate) fn summary(viewer: &Viewer, status: &GetTaskStatusOutput) -> Markup {
    let task = &status.task;
    let id = task.task_id.as_str();
    html! {
        dl.facts {
            dt { "State" } dd #task-state data-status=(task.status.as_str()) { (status_badge(task.status)) }
            dt { "Executor" } dd { (task.executor) }
            dt { "Directory" } dd { code { (task.workdir) } }
            dt { "Submitted" } dd { (when(task.created_at_ms)) }
            @if let Some(ms) = task.duration_ms { dt { "Run time" } dd { (took(ms)) } }
            @if let Some(position) = status.queue_position { dt { "Queue" } dd { "#" (position) } }
            @if let Some(error) = &task.error { dt { "Error" } dd.problem { (error) } }
        }
        @if !status.pending_input.is_empty() {
            section #pending.pending {
                h2 { "Waiting for an answer" }
                @for request in &status.pending_input { (pending(viewer, id, request)) }
            }
        }
        @if let Some(completion) = &status.completion { (verdict(completion)) }
        (controls(viewer, id, task.status))
    }
}

/// One pending request with its Approve / Deny buttons and the scope they apply to.
fn pending(viewer: &Viewer, id: &str, request: &PendingInputView) -> Markup {
    html! {
        form.request method="post" action=(task_href(id, "/approve")) data-request-id=(request.request_id) {
            (csrf_field(viewer))
            input type="hidden" name="request_id" value=(request.request_id);
            p.title { strong { (request.permission) } " · " (request.title) }
            @if !request.patterns.is_empty() {
                p.patterns { @for p in &request.patterns { code { (p) } " " } }
            }
            @if request.kind == "permission" {
                label { "Scope "
                    select name="scope" {
                        option value="once" selected { "once" }
                        option value="task" { "this task" }
                        option value="project" { "this project" }
                    }
                }
            }
            button.approve type="submit" name="decision" value="allow" { "Approve" }
            button.deny type="submit" name="decision" value="deny" { "Deny" }
        }
    }
}

/// Cancel, pause and resume, as the state allows.
fn controls(viewer: &Viewer, id: &str, status: TaskStatus) -> Markup {
    let pausable = matches!(status, TaskStatus::Running | TaskStatus::InputRequired);
    html! {
        @if !status.is_terminal() {
            form #controls.controls method="post" action=(task_href(id, "/control")) {
                (csrf_field(viewer))
                @if pausable { button type="submit" name="control" value="pause" { "Pause" } }
                @if status == TaskStatus::Paused { button type="submit" name="control" value="resume" { "Resume" } }
                button.danger type="submit" name="control" value="cancel" { "Cancel" }
            }
        }
    }
}

/// The evaluator's conclusion (`completion` of `get_task_status`).
fn verdict(completion: &Value) -> Markup {
    let text = |key: &str| {
        completion
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    html! {
        section #verdict.verdict {
            h2 { "Evaluator" }
            @if let Some(word) = completion.as_str() {
                p { (word) }
            } @else {
                p { strong { (text("status").unwrap_or_default()) }
                    @if let Some(cycles) = completion.get("cycles").filter(|c| !c.is_null()) { " after " (cycles) " cycle(s)" }
                    @if let Some(confidence) = completion.get("confidence").filter(|c| !c.is_null()) { " · confidence " (confidence) }
                }
                @if let Some(reason) = text("reason") { p { (reason) } }
                @if let Some(Value::Array(remaining)) = completion.get("remaining") {
                    @if !remaining.is_empty() {
                        ul { @for item in remaining { li { (item.as_str().map_or_else(|| item.to_string(), str::to_owned)) } } }
                    }
                }
            }
        }
    }
}

/// The outcome: the agent's answer, verdict events, the diff, a link to the files.
pub(crate) fn outcome(id: &str, outcome: &Outcome) -> Markup {
    html! {
        section.answer {
            h2 { "Answer" }
            @match &outcome.answer {
                Some(answer) => pre #answer.answer { (answer) },
                None => p.note { "No answer yet." },
            }
        }
        @if !outcome.verdicts.is_empty() {
            section.verdicts {
                h2 { "Verdicts" }
                ul #verdicts { @for v in &outcome.verdicts { li { (v.message) } } }
            }
        }
        section #diff-section {
            h2 { "Diff" }
            @match &outcome.diff {
                Some(d) if !d.content.is_empty() => {
                    (diff::render(&d.content))
                    @if d.truncated { p.note { "The first part of " (d.size) " bytes." } }
                },
                _ => p.note { "No changes recorded." },
            }
        }
        p { a #files-link href=(format!("{}?", task_href(id, "/files"))) { "Browse the task's files" } }
    }
}

/// Events as list items, each with its number, time and kind: those `lines` picks (one per
/// tool call, no policy allow), as every surface shows them.
pub(crate) fn event_items(events: &[EventView], lines: &mut EventLines) -> Markup {
    let shown = events.iter().filter(|e| lines.keep(e.kind, &e.data));
    html! {
        @for e in shown {
            li id=(format!("ev-{}", e.seq)) class=(format!("ev k-{}", e.kind.as_str())) data-seq=(e.seq) {
                span.seq { (e.seq) }
                span.at { (when(e.at_ms)) }
                span.kind { (e.kind.as_str()) }
                span.msg { (e.message) }
            }
        }
    }
}

/// The last text the agent wrote, for an executor that stores no output.
pub(crate) fn last_text(events: &[EventView]) -> Option<String> {
    events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::Text && !e.message.trim().is_empty())
        .map(|e| e.message.clone())
}

/// The whole task page.
pub(crate) fn task_page(
    viewer: &Viewer,
    status: &GetTaskStatusOutput,
    found: &Outcome,
    events: &[EventView],
) -> Markup {
    let task = &status.task;
    let id = task.task_id.as_str();
    let last_seq = events.last().map_or(0, |e| e.seq);
    let body = html! {
        p.crumbs { a href="/" { "← tasks" } }
        h1 { "Task " code { (id) } }
        p.description { (task.description) }
        div #task data-live=(format!("{}?after={last_seq}", task_href(id, "/events"))) {
            section #summary { (summary(viewer, status)) }
            @if !task.status.is_terminal() {
                form #message-form.message method="post" action=(task_href(id, "/message")) {
                    (csrf_field(viewer))
                    label for="message" { "Message to the agent" }
                    textarea #message name="message" rows="2" required maxlength="65536" {}
                    button type="submit" { "Send" }
                }
            }
            section #outcome { (outcome(id, found)) }
            section.events {
                h2 { "Events" }
                ol #events { (event_items(events, &mut EventLines::default())) }
            }
        }
    };
    page(&format!("Task {id}"), Some(viewer), body)
}
