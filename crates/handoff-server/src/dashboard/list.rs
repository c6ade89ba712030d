//! The task list: which tasks it shows (a state, a text in the description, a page) as the
//! query string says, read with `list_tasks` and its cursor, so a page of the newest tasks
//! costs the same at a hundred thousand tasks as at ten.

use std::sync::Arc;

use axum::{
    Extension,
    extract::{RawQuery, State},
    response::Response,
};
use handoff_protocol::{
    TaskStatus,
    tasks::{LIST_TEXT_MAX_CHARS, ListTasksArgs, ListTasksOutput},
};
use handoff_tools::ToolError;
use http::StatusCode;

use super::{Dashboard, auth::Viewer, forms::Refused, pages, views};

/// Tasks a page of the list shows.
pub(crate) const PAGE_SIZE: u32 = 50;

/// What the list shows: the query string of `/` (and of its live stream, `/events`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListQuery {
    /// Only tasks in this state (`status`).
    pub(crate) status: Option<TaskStatus>,
    /// Only tasks whose description contains this (`q`).
    pub(crate) text: Option<String>,
    /// The page: the `next_cursor` of the page before (`cursor`); none: the newest.
    pub(crate) cursor: Option<String>,
}

impl ListQuery {
    /// Reads the query string; an empty parameter is no filter. Errors name the parameter and
    /// never repeat its value.
    pub(crate) fn parse(query: Option<&str>) -> Result<Self, Refused> {
        let value = |name: &str| pages::query_value(query, name).filter(|v| !v.is_empty());
        let status = match value("status") {
            None => None,
            Some(text) => Some(text.parse::<TaskStatus>().map_err(|_| {
                Refused::new(
                    StatusCode::BAD_REQUEST,
                    "Query parameter `status`: not a task state (queued, running, paused, input_required, completed, failed, timeout, cancelled).",
                )
            })?),
        };
        let text = value("q")
            .map(|q| q.trim().to_owned())
            .filter(|q| !q.is_empty());
        if text
            .as_deref()
            .is_some_and(|q| q.chars().count() > LIST_TEXT_MAX_CHARS)
        {
            return Err(Refused::new(
                StatusCode::BAD_REQUEST,
                "Query parameter `q`: longer than 200 characters.",
            ));
        }
        let cursor = value("cursor");
        if cursor.as_deref().is_some_and(|c| !is_cursor(c)) {
            return Err(Refused::new(
                StatusCode::BAD_REQUEST,
                "Query parameter `cursor`: not a cursor of this list.",
            ));
        }
        Ok(Self {
            status,
            text,
            cursor,
        })
    }

    /// The query string of this list on the page `cursor` names (`None`: the newest).
    pub(crate) fn query(&self, cursor: Option<&str>) -> String {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        if let Some(status) = self.status {
            pairs.push(("status", status.as_str()));
        }
        if let Some(text) = &self.text {
            pairs.push(("q", text));
        }
        if let Some(cursor) = cursor {
            pairs.push(("cursor", cursor));
        }
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }

    /// `/` showing this list on the page `cursor` names.
    pub(crate) fn href(&self, cursor: Option<&str>) -> String {
        match self.query(cursor) {
            q if q.is_empty() => "/".to_owned(),
            q => format!("/?{q}"),
        }
    }

    /// The live stream of this very page.
    pub(crate) fn live(&self) -> String {
        match self.query(self.cursor.as_deref()) {
            q if q.is_empty() => "/events".to_owned(),
            q => format!("/events?{q}"),
        }
    }

    /// Whether anything narrows the list.
    pub(crate) fn is_filtered(&self) -> bool {
        self.status.is_some() || self.text.is_some()
    }
}

/// `c` and up to 19 digits, as `list_tasks` makes its cursors.
fn is_cursor(text: &str) -> bool {
    text.strip_prefix('c')
        .is_some_and(|n| (1..=19).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Reads the page `query` asks for.
pub(crate) async fn read(
    dashboard: &Dashboard,
    viewer: &Viewer,
    query: &ListQuery,
) -> Result<ListTasksOutput, ToolError> {
    let args = ListTasksArgs {
        agent_id: None,
        status: query.status,
        limit: Some(PAGE_SIZE),
        cursor: query.cursor.clone(),
        text: query.text.clone(),
    };
    dashboard.tools.call(viewer, &args).await
}

/// `GET /`: the task list, live.
pub(crate) async fn task_list(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    RawQuery(raw): RawQuery,
) -> Response {
    let query = match ListQuery::parse(raw.as_deref()) {
        Ok(query) => query,
        Err(refused) => return refused.page(),
    };
    match read(&dashboard, &viewer, &query).await {
        Ok(page) => views::respond(StatusCode::OK, views::task_list(&viewer, &page, &query)),
        Err(error) => pages::tool_failure(&error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_read_and_written_back() {
        let query = ListQuery::parse(Some("status=failed&q=fix+the+%26+login&cursor=c42")).unwrap();
        assert_eq!(query.status, Some(TaskStatus::Failed));
        assert_eq!(query.text.as_deref(), Some("fix the & login"));
        assert_eq!(query.cursor.as_deref(), Some("c42"));
        assert_eq!(query.href(None), "/?status=failed&q=fix+the+%26+login");
        assert_eq!(
            query.href(Some("c7")),
            "/?status=failed&q=fix+the+%26+login&cursor=c7"
        );
        assert_eq!(
            query.live(),
            "/events?status=failed&q=fix+the+%26+login&cursor=c42"
        );
        let all = ListQuery::parse(Some("status=&q=+&cursor=")).unwrap();
        assert_eq!(all, ListQuery::default());
        assert_eq!(
            (all.href(None), all.live()),
            ("/".to_owned(), "/events".to_owned())
        );
        assert!(!all.is_filtered() && query.is_filtered());
    }

    #[test]
    fn bad_parameters_are_named_not_repeated() {
        let long = format!("q={}", "x".repeat(201));
        for (query, name) in [
            ("status=<b>", "status"),
            ("cursor=<b>", "cursor"),
            ("cursor=c", "cursor"),
            ("cursor=c12345678901234567890", "cursor"),
            (long.as_str(), "q"),
        ] {
            let refused = ListQuery::parse(Some(query)).unwrap_err();
            assert!(
                refused.message.contains(&format!("`{name}`")),
                "{}",
                refused.message
            );
            assert!(!refused.message.contains("<b>") && !refused.message.contains("xxx"));
        }
        assert!(ListQuery::parse(Some(&format!("q={}", "é".repeat(200)))).is_ok());
    }
}
