//! The pages' HTML. maud checks the templates at compile time and escapes every value put
//! into them, so task text, file contents and errors can never become markup.

use axum::response::{IntoResponse, Response};
use handoff_protocol::{
    TaskStatus, TaskView,
    tasks::{GetTaskFilesOutput, ListTasksOutput, ReadTaskFileOutput},
};
use http::{StatusCode, header};
use maud::{DOCTYPE, Markup, html};

use super::{auth::Viewer, list::ListQuery};

/// A complete page.
pub(crate) fn page(title: &str, viewer: Option<&Viewer>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Handoff" }
                link rel="stylesheet" href="/assets/dashboard.css";
                script src="/assets/dashboard.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "Handoff" }
                    span #live-state.live-state title="live updates" {}
                    // Shown by the script where the browser has not been asked yet.
                    button #notify-me.link type="button" hidden { "Notify me" }
                    @if let Some(viewer) = viewer {
                        span.who { "operator " (viewer.name.as_str()) }
                        @if viewer.login {
                            form.inline method="post" action="/logout" {
                                (csrf_field(viewer))
                                button.link type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// The hidden field that proves a form came from this dashboard.
pub(crate) fn csrf_field(viewer: &Viewer) -> Markup {
    html! {
        @if let Some(csrf) = &viewer.csrf {
            input type="hidden" name="csrf" value=(csrf);
        }
    }
}

/// An HTML response.
pub(crate) fn respond(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            // Only this server's script and styles; no framing, so no clickjacked Approve.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "same-origin"),
        ],
        markup.into_string(),
    )
        .into_response()
}

/// A page saying what went wrong.
pub(crate) fn error_page(status: StatusCode, message: impl AsRef<str>) -> Response {
    let body = html! {
        section.error {
            h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("Error")) }
            p #error-message { (message.as_ref()) }
            p { a href="/" { "Back to the tasks" } }
        }
    };
    respond(status, page("Error", None, body))
}

/// The login form.
pub(crate) fn login(problem: Option<&str>) -> Markup {
    let body = html! {
        section.login {
            h1 { "Log in" }
            p { "Paste an operator token (" code { "auth.tokens" } ", role operator)." }
            @if let Some(problem) = problem {
                p #login-error.problem { (problem) }
            }
            form method="post" action="/login" {
                label for="token" { "Operator token" }
                input #token type="password" name="token" autocomplete="off" required;
                button type="submit" { "Log in" }
            }
        }
    };
    page("Log in", None, body)
}

/// A Unix-ms time for people.
pub(crate) fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// A duration in ms for people.
pub(crate) fn took(ms: i64) -> String {
    let secs = ms / 1000;
    match secs {
        s if s < 60 => format!("{}.{} s", s, (ms % 1000) / 100),
        s if s < 3600 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// A state as a coloured badge.
pub(crate) fn status_badge(status: TaskStatus) -> Markup {
    html! { span class=(format!("status s-{}", status.as_str())) { (status.as_str()) } }
}

/// `/tasks/{id}` and the pages under it.
pub(crate) fn task_href(id: &str, rest: &str) -> String {
    format!("/tasks/{id}{rest}")
}

/// A query string of one `path` parameter.
pub(crate) fn path_query(path: &str) -> String {
    serde_urlencoded::to_string([("path", path)]).unwrap_or_default()
}

/// The rows of the task list (the live part of `/`).
pub(crate) fn task_rows(tasks: &[TaskView]) -> Markup {
    html! {
        @if tasks.is_empty() {
            tr.empty { td colspan="5" { "No tasks." } }
        }
        @for task in tasks {
            tr.task data-task-id=(task.task_id) data-status=(task.status.as_str()) {
                td { a href=(task_href(&task.task_id, "")) { code { (task.task_id) } } }
                td.state { (status_badge(task.status)) }
                td { (task.executor) }
                td.desc { (task.description) }
                td.when { (when(task.created_at_ms)) }
            }
        }
    }
}

/// The task list page: the filters, the rows of one page (live), the way to the next page.
pub(crate) fn task_list(viewer: &Viewer, listed: &ListTasksOutput, query: &ListQuery) -> Markup {
    let body = html! {
        h1 { "Tasks" }
        p.actions { a #new-task-link.button href="/new" { "New task" } }
        (filters(query))
        table #tasks {
            thead { tr { th { "Task" } th { "State" } th { "Executor" } th { "Description" } th { "Submitted" } } }
            tbody #task-rows data-live=(query.live()) { (task_rows(&listed.tasks)) }
        }
        nav #pager.pager { (pager(query, listed.next_cursor.as_deref())) }
    };
    page("Tasks", Some(viewer), body)
}

/// The state and text filters: a plain GET form, so they work without the script.
fn filters(query: &ListQuery) -> Markup {
    html! {
        form #filters.filters method="get" action="/" {
            label { "State "
                select #filter-status name="status" {
                    option value="" selected[query.status.is_none()] { "all" }
                    @for status in TaskStatus::ALL {
                        option value=(status.as_str()) selected[query.status == Some(status)] { (status.as_str()) }
                    }
                }
            }
            label { "Description contains "
                input #filter-text type="search" name="q" maxlength="200"
                    value=(query.text.as_deref().unwrap_or_default());
            }
            button type="submit" { "Filter" }
            @if query.is_filtered() { a #filter-clear href="/" { "Clear" } }
        }
    }
}

/// The links to the newest page (from an older one) and to the next older page.
pub(crate) fn pager(query: &ListQuery, next_cursor: Option<&str>) -> Markup {
    html! {
        @if query.cursor.is_some() { a #page-newest href=(query.href(None)) { "← Newest" } }
        @if let Some(next) = next_cursor { a #page-older href=(query.href(Some(next))) { "Older →" } }
    }
}

/// A directory listing of a task's working directory.
pub(crate) fn files(
    viewer: &Viewer,
    id: &str,
    dir: Option<&str>,
    listing: &GetTaskFilesOutput,
) -> Markup {
    let body = html! {
        p.crumbs { a href=(task_href(id, "")) { "← task " code { (id) } } }
        h1 { "Files" @if let Some(dir) = dir { " in " code { (dir) } } }
        ul #files.files {
            @for entry in &listing.entries {
                li class=(format!("entry k-{}", entry.kind)) {
                    @if entry.kind == "dir" {
                        a href=(format!("{}?{}", task_href(id, "/files"), path_query(&entry.path))) { (entry.path) "/" }
                    } @else {
                        a href=(format!("{}?{}", task_href(id, "/file"), path_query(&entry.path))) { (entry.path) }
                        @if let Some(size) = entry.size { span.size { (size) " bytes" } }
                    }
                }
            }
            @if listing.entries.is_empty() { li.empty { "Empty." } }
        }
        @if listing.truncated { p.note { "Only the first entries are shown." } }
    };
    page("Files", Some(viewer), body)
}

/// One file of a task.
pub(crate) fn file(viewer: &Viewer, id: &str, read: &ReadTaskFileOutput) -> Markup {
    let body = html! {
        p.crumbs { a href=(format!("{}?", task_href(id, "/files"))) { "← files of " code { (id) } } }
        h1 { code { (read.path) } }
        p.note { (read.size) " bytes" @if read.has_more { ", the first " (read.bytes_read) " shown" } }
        @if read.binary {
            p #file-binary { "A binary file." }
        } @else {
            pre #file-content.file { (read.content.as_deref().unwrap_or_default()) }
        }
    };
    page(&read.path, Some(viewer), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use handoff_tools::AgentId;

    #[test]
    fn task_text_is_escaped_everywhere() {
        let task: TaskView = serde_json::from_value(serde_json::json!({
            "task_id": "task_x", "status": "running", "executor": "<i>x</i>",
            "description": "<script>alert(1)</script> & \"quotes\"", "priority": 0,
            "workdir": "/w", "created_at_ms": 0, "metadata": {}
        }))
        .unwrap();
        let html = task_rows(&[task]).into_string();
        assert!(!html.contains("<script>"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"),
            "{html}"
        );
        assert!(html.contains("&lt;i&gt;x&lt;/i&gt;"), "{html}");
        assert!(html.contains(r#"data-status="running""#), "{html}");
    }

    #[test]
    fn errors_and_csrf_are_escaped() {
        let viewer = Viewer {
            name: AgentId::parse("op").unwrap(),
            csrf: Some("\"><b>".to_owned()),
            bearer: false,
            login: true,
        };
        let html = csrf_field(&viewer).into_string();
        assert!(html.contains("value=\"&quot;&gt;&lt;b&gt;\""), "{html}");
        let login = login(Some("<img src=x>")).into_string();
        assert!(login.contains("&lt;img src=x&gt;"), "{login}");
        assert_eq!(path_query("a b/&c"), "path=a+b%2F%26c");
    }
}
