//! Live updates over SSE: the engine's notices wake a stream, which re-reads what changed
//! through the tools (a lagging subscriber loses nothing: it re-reads all the same) and sends
//! server-rendered fragments. Each message is `replace` or `append` with
//! `{"target": element id, "html": …}`; the script puts them in place.

use std::{convert::Infallible, sync::Arc};

use axum::{
    Extension,
    extract::{Path, RawQuery, State},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use futures::{Stream, StreamExt, stream};
use handoff_protocol::{EventLines, TaskId, TaskNotice, TaskStatus};
use http::HeaderMap;
use maud::Markup;
use serde_json::json;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};

use super::{
    Dashboard,
    auth::Viewer,
    diff_part::DiffAt,
    list::{self, ListQuery},
    pages::{self, query_value},
    task_view, views,
};

/// Events read per history call while catching up.
const EVENTS_PAGE: u32 = 500;
/// History calls per wake, at most; the rest waits for the next notice.
const PAGES_PER_WAKE: usize = 8;

/// A message putting `markup` in place of element `target`'s content.
fn replace(target: &str, markup: Markup) -> Option<Event> {
    Event::default()
        .event("replace")
        .json_data(json!({"target": target, "html": markup.into_string()}))
        .ok()
}

/// A message appending `markup` to element `target`.
fn append(target: &str, markup: Markup) -> Option<Event> {
    Event::default()
        .event("append")
        .json_data(json!({"target": target, "html": markup.into_string()}))
        .ok()
}

/// A message saying a re-read failed (the page keeps what it shows).
fn problem(message: &str) -> Option<Event> {
    Event::default()
        .event("problem")
        .json_data(json!({"message": message}))
        .ok()
}

/// Waits for the next notice `wanted` accepts, then swallows the ones already queued, so a
/// burst costs one re-read. `false`: the engine is gone.
async fn next_wake(
    notices: &mut broadcast::Receiver<TaskNotice>,
    wanted: &(dyn Fn(&TaskNotice) -> bool + Send + Sync),
) -> bool {
    loop {
        match notices.recv().await {
            Ok(notice) if wanted(&notice) => break,
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => break,
            Err(RecvError::Closed) => return false,
        }
    }
    loop {
        match notices.try_recv() {
            Ok(_) | Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Empty) => return true,
            Err(TryRecvError::Closed) => return false,
        }
    }
}

/// Wraps a stream of messages as an SSE response that ends when the server stops.
fn sse(
    dashboard: &Dashboard,
    messages: impl Stream<Item = Vec<Event>> + Send + 'static,
) -> Response {
    let events = messages
        .flat_map(stream::iter)
        .map(Ok::<_, Infallible>)
        .take_until(dashboard.shutdown.clone().cancelled_owned());
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `GET /events`: the rows of one page of the task list (and the links to the pages beside
/// it), re-sent whenever a task changes state.
pub(crate) async fn list_events(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    RawQuery(raw): RawQuery,
) -> Response {
    let query = match ListQuery::parse(raw.as_deref()) {
        Ok(query) => query,
        Err(refused) => return refused.page(),
    };
    let notices = dashboard.engine.subscribe();
    let state = (dashboard.clone(), viewer, notices, true);
    let messages = stream::unfold(state, move |(dashboard, viewer, mut notices, first)| {
        let query = query.clone();
        async move {
            let status_only = |n: &TaskNotice| matches!(n, TaskNotice::Status(..));
            if !first && !next_wake(&mut notices, &status_only).await {
                return None;
            }
            let messages: Vec<Event> = match list::read(&dashboard, &viewer, &query).await {
                Ok(page) => replace("task-rows", views::task_rows(&page.tasks))
                    .into_iter()
                    .chain(replace(
                        "pager",
                        views::pager(&query, page.next_cursor.as_deref()),
                    ))
                    .collect(),
                Err(error) => problem(&error.to_string()).into_iter().collect(),
            };
            Some((messages, (dashboard, viewer, notices, false)))
        }
    });
    sse(&dashboard, messages)
}

/// Where a task stream stands.
struct TaskFollow {
    dashboard: Arc<Dashboard>,
    viewer: Viewer,
    id: TaskId,
    notices: broadcast::Receiver<TaskNotice>,
    /// The last event the page has.
    last_seq: u64,
    /// The state the outcome was last rendered for.
    rendered: Option<TaskStatus>,
    /// The part of the diff the page shows.
    diff_at: DiffAt,
    /// The tool calls whose line the page has.
    lines: EventLines,
    first: bool,
}

impl TaskFollow {
    /// Re-reads the task: its summary, the events after the last sent, and (when its state
    /// moved) its outcome.
    async fn update(&mut self) -> Vec<Event> {
        let (dashboard, viewer, id) = (&self.dashboard, &self.viewer, &self.id);
        let state = match pages::status(dashboard, viewer, id).await {
            Ok(state) => state,
            Err(error) => return problem(&error.to_string()).into_iter().collect(),
        };
        let mut out: Vec<Event> = replace("summary", task_view::summary(viewer, &state))
            .into_iter()
            .collect();
        for _ in 0..PAGES_PER_WAKE {
            match pages::events_after(dashboard, viewer, id, self.last_seq, EVENTS_PAGE).await {
                Ok((events, total)) => {
                    let Some(last) = events.last() else { break };
                    self.last_seq = u64::try_from(last.seq).unwrap_or(self.last_seq);
                    out.extend(
                        append("events", task_view::event_items(&events, &mut self.lines))
                            .map(|e| e.id(self.last_seq.to_string())),
                    );
                    if self.last_seq >= total {
                        break;
                    }
                }
                Err(error) => {
                    out.extend(problem(&error.to_string()));
                    break;
                }
            }
        }
        if self.rendered != Some(state.task.status) {
            self.rendered = Some(state.task.status);
            match pages::outcome(dashboard, viewer, id, state.answer.clone(), &self.diff_at).await {
                Ok((found, _)) => {
                    out.extend(replace("outcome", task_view::outcome(id.as_str(), &found)))
                }
                Err(error) => out.extend(problem(&error.to_string())),
            }
        }
        out
    }
}

/// Where the page's events end: `Last-Event-ID` on a reconnect, else `?after=`.
fn resume_point(headers: &HeaderMap, query: Option<&str>) -> u64 {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query_value(query, "after"))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
}

/// `GET /tasks/{id}/events`: the task's summary and outcome re-sent and its new events
/// appended, whenever something happens to it.
pub(crate) async fn task_events(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    Path(raw): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let id = match pages::task_id(&raw) {
        Ok(id) => id,
        Err(refused) => return refused.page(),
    };
    let diff_at = match DiffAt::parse(query.as_deref()) {
        Ok(at) => at,
        Err(refused) => return refused.page(),
    };
    let follow = TaskFollow {
        notices: dashboard.engine.subscribe(),
        dashboard: dashboard.clone(),
        viewer,
        last_seq: resume_point(&headers, query.as_deref()),
        // The outcome the page was rendered with stands until the state moves.
        rendered: query_value(query.as_deref(), "shown").and_then(|s| s.parse().ok()),
        diff_at,
        lines: EventLines::default(),
        first: true,
        id,
    };
    let messages = stream::unfold(follow, |mut follow| async move {
        let task = follow.id.clone();
        let about_task = move |n: &TaskNotice| n.task() == &task;
        if !follow.first && !next_wake(&mut follow.notices, &about_task).await {
            return None;
        }
        follow.first = false;
        let out = follow.update().await;
        Some((out, follow))
    });
    sse(&dashboard, messages)
}
