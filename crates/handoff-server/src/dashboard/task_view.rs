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
    diff, diff_parse,
    diff_part::DiffAt,
    views::{csrf_field, page, status_badge, task_href, took, when},
};

/// What a task produced, as far as it got.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// The agent's final answer: its stored output, else the last text it wrote.
    pub(crate) answer: Option<String>,
    /// The part of the stored diff the page shows.
    pub(crate) diff: Option<ArtifactView>,
    /// Where that part starts.
    pub(crate) diff_at: DiffAt,
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
            @if let Some(usage) = &status.model_usage { dt { "Model usage" } dd #model-usage { (usage.summary()) } }
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

/// Cancel, pause and resume, as the state allows. Cancel asks first: the script with a dialog
/// (then it sends `confirm`), without it the server with a page of its own.
fn controls(viewer: &Viewer, id: &str, status: TaskStatus) -> Markup {
    let pausable = matches!(status, TaskStatus::Running | TaskStatus::InputRequired);
    html! {
        @if !status.is_terminal() {
            form #controls.controls method="post" action=(task_href(id, "/control")) {
                (csrf_field(viewer))
                @if pausable { button type="submit" name="control" value="pause" { "Pause" } }
                @if status == TaskStatus::Paused { button type="submit" name="control" value="resume" { "Resume" } }
                button.danger type="submit" name="control" value="cancel" data-confirm="Cancel this task? The agent is stopped." { "Cancel" }
            }
        }
    }
}

/// The page that asks before a task is cancelled (for a browser without the script).
pub(crate) fn confirm_cancel(viewer: &Viewer, status: &GetTaskStatusOutput) -> Markup {
    let id = status.task.task_id.as_str();
    let body = html! {
        p.crumbs { a href=(task_href(id, "")) { "← task " code { (id) } } }
        section #confirm-cancel.confirm {
            h1 { "Cancel task " code { (id) } "?" }
            p.description { (status.task.description) }
            p { "The agent is stopped with its whole process group; what it wrote so far stays in its directory." }
            form #confirm-cancel-form method="post" action=(task_href(id, "/control")) {
                (csrf_field(viewer))
                input type="hidden" name="control" value="cancel";
                input type="hidden" name="confirm" value="yes";
                label for="reason" { "Reason (optional)" }
                input #reason type="text" name="reason" maxlength="2000";
                button.danger type="submit" { "Cancel the task" }
                " "
                a href=(task_href(id, "")) { "Keep it running" }
            }
        }
    };
    page(&format!("Cancel task {id}"), Some(viewer), body)
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
                Some(part) if !part.content.is_empty() => (diff_part(id, part, &outcome.diff_at)),
                _ => p.note { "No changes recorded." },
            }
        }
        p { a #files-link href=(format!("{}?", task_href(id, "/files"))) { "Browse the task's files" } }
    }
}

/// One part of the diff: its files, and the links to the first and the next part when the
/// diff does not fit one.
fn diff_part(id: &str, part: &ArtifactView, at: &DiffAt) -> Markup {
    let (files, end) = diff_parse::parse(&part.content, at.resume.as_ref());
    let next = part.next_offset.map(|offset| DiffAt {
        offset,
        resume: Some(end),
    });
    let shown_to = part.next_offset.unwrap_or(part.size);
    html! {
        @if at.offset > 0 || next.is_some() {
            p #diff-range.note { "Bytes " (at.offset) "–" (shown_to) " of " (part.size) "." }
        }
        @if part.capped { p.note { "The executor produced more than the server keeps: the end is missing." } }
        (diff::render(&files, next.is_some()))
        p.diff-pages {
            @if at.offset > 0 { a #diff-first href=(DiffAt::default().href(id)) { "First part of the diff" } " " }
            @if let Some(next) = &next { a #diff-next href=(next.href(id)) { "Next part of the diff" } }
        }
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

/// The page title: a task waiting for an approval says so first, where a person sees it in
/// a tab bar.
pub(crate) fn title(status: &GetTaskStatusOutput) -> String {
    let id = &status.task.task_id;
    if status.pending_input.is_empty() {
        format!("Task {id}")
    } else {
        format!("(approval) Task {id}")
    }
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
    // The stream knows what the page shows: the outcome is re-sent only when the state moves.
    let mut live = format!(
        "{}?after={last_seq}&shown={}",
        task_href(id, "/events"),
        task.status.as_str()
    );
    let diff_query = found.diff_at.query();
    if !diff_query.is_empty() {
        live = format!("{live}&{diff_query}");
    }
    let body = html! {
        p.crumbs { a href="/" { "← tasks" } }
        h1 { "Task " code { (id) } }
        p.description { (task.description) }
        div #task data-live=(live) data-task-id=(id) {
            section #summary { (summary(viewer, status)) }
            (message_form(viewer, id, task.status))
            section #outcome { (outcome(id, found)) }
            (review(viewer, id))
            section.events {
                h2 { "Events" }
                ol #events { (event_items(events, &mut EventLines::default())) }
            }
        }
    };
    page(&title(status), Some(viewer), body)
}

/// The message form, offered in every state: a finished task takes a message as the start of
/// a follow-up round (the note says so; the script keeps it in step with the state).
fn message_form(viewer: &Viewer, id: &str, status: TaskStatus) -> Markup {
    html! {
        form #message-form.message method="post" action=(task_href(id, "/message")) {
            (csrf_field(viewer))
            label for="message" { "Message to the agent" }
            textarea #message name="message" rows="2" required maxlength="65536" {}
            button type="submit" { "Send" }
        }
        p #message-note.note hidden[!status.is_terminal()] {
            "The task has ended: a message starts a follow-up round of work on it."
        }
    }
}

/// Line comments on the diff: collected by the script (which shows this section once there
/// is one) and sent together as one message.
fn review(viewer: &Viewer, id: &str) -> Markup {
    html! {
        section #review.review hidden {
            h2 { "Review comments" }
            ol #review-comments {}
            form #review-form method="post" action=(task_href(id, "/message")) {
                (csrf_field(viewer))
                input #review-payload type="hidden" name="comments" value="";
                button #review-send type="submit" { "Send comments" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use handoff_protocol::tasks::GetTaskStatusOutput;
    use handoff_tools::AgentId;
    use serde_json::json;

    use super::*;

    fn viewer() -> Viewer {
        Viewer {
            name: AgentId::parse("op").unwrap(),
            csrf: Some("token".into()),
            bearer: false,
            login: true,
        }
    }

    fn status(state: &str, pending: bool) -> GetTaskStatusOutput {
        let pending_input = if pending {
            json!([{"request_id": "per_1", "kind": "permission", "permission": "bash",
                    "patterns": ["touch x"], "title": "touch x", "detail": {}}])
        } else {
            json!([])
        };
        serde_json::from_value(json!({
            "task_id": "task_aaaaaaaaaaaaaaaaaaaaaaaaaa", "status": state, "executor": "opencode",
            "description": "<b>fix</b>", "priority": 0, "workdir": "/w", "created_at_ms": 0,
            "metadata": {}, "recent_events": [], "pending_input": pending_input
        }))
        .unwrap()
    }

    fn diff_view(content: &str, next_offset: Option<u64>) -> ArtifactView {
        serde_json::from_value(json!({
            "kind": "diff", "size": 100_000, "capped": false, "content": content,
            "truncated": next_offset.is_some(), "offset": 0, "next_offset": next_offset
        }))
        .unwrap()
    }

    #[test]
    fn a_task_waiting_for_approval_says_so_in_its_title() {
        let waiting = status("input_required", true);
        assert_eq!(
            title(&waiting),
            "(approval) Task task_aaaaaaaaaaaaaaaaaaaaaaaaaa"
        );
        let page = task_page(&viewer(), &waiting, &Outcome::default(), &[]).into_string();
        assert!(page.contains("<title>(approval) Task task_"), "{page}");
        assert_eq!(
            title(&status("running", false)),
            "Task task_aaaaaaaaaaaaaaaaaaaaaaaaaa"
        );
    }

    #[test]
    fn finished_tasks_take_messages_and_review_comments() {
        let page = task_page(
            &viewer(),
            &status("completed", false),
            &Outcome::default(),
            &[],
        )
        .into_string();
        assert!(page.contains(r#"id="message-form""#), "{page}");
        assert!(
            page.contains(r#"<p class="note" id="message-note">"#),
            "{page}"
        );
        assert!(page.contains(r#"id="review-form""#) && page.contains(r#"name="comments""#));
        assert!(page.contains("&amp;shown=completed"), "{page}");
        assert!(!page.contains(r#"id="controls""#), "{page}");
        let running = task_page(
            &viewer(),
            &status("running", false),
            &Outcome::default(),
            &[],
        )
        .into_string();
        assert!(running.contains(r#"id="message-note" hidden"#), "{running}");
        assert!(
            running.contains(r#"value="cancel" data-confirm="#),
            "{running}"
        );
    }

    #[test]
    fn the_summary_shows_model_usage_once_the_task_called_a_model() {
        let mut running = status("running", false);
        let html = summary(&viewer(), &running).into_string();
        assert!(!html.contains("Model usage"), "{html}");
        running.model_usage = Some(
            serde_json::from_value(json!({
                "calls": 2, "input_tokens": 1500, "output_tokens": 40, "cached_tokens": 0,
                "cost_usd": 0.0034
            }))
            .unwrap(),
        );
        let html = summary(&viewer(), &running).into_string();
        assert!(
            html.contains("2 calls, 1,500 in / 40 out tokens, $0.0034"),
            "{html}"
        );
    }

    #[test]
    fn cancel_is_confirmed_on_a_page_of_its_own() {
        let page = confirm_cancel(&viewer(), &status("running", false)).into_string();
        assert!(page.contains(r#"name="confirm" value="yes""#), "{page}");
        assert!(page.contains(r#"name="control" value="cancel""#), "{page}");
        assert!(page.contains("&lt;b&gt;fix&lt;/b&gt;"), "{page}");
        assert!(page.contains(r#"name="csrf" value="token""#), "{page}");
    }

    #[test]
    fn a_diff_in_parts_links_to_the_next_part_with_its_file_and_lines() {
        let content =
            "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,9 +1,9 @@\n-x\n+y\n";
        let found = Outcome {
            diff: Some(diff_view(content, Some(60))),
            ..Outcome::default()
        };
        let html = outcome("task_x", &found).into_string();
        assert!(
            html.contains(r#"href="/tasks/task_x?diff_offset=60&amp;diff_file=a.txt&amp;diff_old=2&amp;diff_new=2&amp;diff_hunk=1#diff-section""#),
            "{html}"
        );
        assert!(
            html.contains("Next part of the diff") && !html.contains("First part"),
            "{html}"
        );
        assert!(html.contains("Bytes 0–60 of 100000."), "{html}");
        let whole = Outcome {
            diff: Some(diff_view(content, None)),
            ..Outcome::default()
        };
        let html = outcome("task_x", &whole).into_string();
        assert!(
            !html.contains("diff-next") && !html.contains("diff-range"),
            "{html}"
        );
        assert!(!html.contains("read_tool_output"));
    }
}
