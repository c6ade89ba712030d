//! The pages: what each shows is read through the task tools, as the viewer.

use std::sync::Arc;

use axum::{
    Extension,
    extract::{Path, RawQuery, State},
    response::{IntoResponse, Response},
};
use handoff_protocol::{
    ArtifactKind, EventView, TaskId,
    tasks::{
        GetTaskFilesArgs, GetTaskHistoryArgs, GetTaskStatusArgs, GetTaskStatusOutput,
        ReadTaskFileArgs,
    },
};
use handoff_tools::ToolError;
use http::StatusCode;

use super::{
    Dashboard,
    auth::Viewer,
    diff_part::{self, DiffAt},
    forms::Refused,
    task_view::{self, Outcome},
    views,
};

/// Events a task page shows at most (the newest).
const EVENTS_SHOWN: u64 = 1000;
/// Bytes of a file shown.
const FILE_BYTES: u64 = 256 * 1024;

/// A failed read or action as a page: the status the error calls for, its bounded message.
pub(crate) fn tool_failure(error: &ToolError) -> Response {
    let status = match error {
        ToolError::NotFound { .. } | ToolError::UnknownTool { .. } => StatusCode::NOT_FOUND,
        ToolError::InvalidArguments { .. } => StatusCode::BAD_REQUEST,
        ToolError::Denied { .. } => StatusCode::FORBIDDEN,
        ToolError::Conflict { .. } | ToolError::Unsupported { .. } => StatusCode::CONFLICT,
        ToolError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    views::error_page(status, error.to_string())
}

/// The task id of a URL, checked before it goes anywhere (and never repeated back).
pub(crate) fn task_id(raw: &str) -> Result<TaskId, Refused> {
    TaskId::parse(raw).map_err(|_| {
        Refused::new(
            StatusCode::NOT_FOUND,
            "No such task: the URL does not hold a task id.",
        )
    })
}

/// The value of `name` in a query string.
pub(crate) fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query.unwrap_or_default())
        .ok()?
        .into_iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value)
}

/// Reads a task's state.
pub(crate) async fn status(
    dashboard: &Dashboard,
    viewer: &Viewer,
    id: &TaskId,
) -> Result<GetTaskStatusOutput, ToolError> {
    let args = GetTaskStatusArgs {
        agent_id: None,
        task_id: id.clone(),
    };
    dashboard.tools.call(viewer, &args).await
}

/// Reads a task's events after `after` (at most `limit`).
pub(crate) async fn events_after(
    dashboard: &Dashboard,
    viewer: &Viewer,
    id: &TaskId,
    after: u64,
    limit: u32,
) -> Result<(Vec<EventView>, u64), ToolError> {
    let args = GetTaskHistoryArgs {
        agent_id: None,
        task_id: id.clone(),
        events_offset: Some(after),
        events_limit: Some(limit),
        include_artifacts: None,
        artifact: None,
        artifact_offset: None,
    };
    let page = dashboard.tools.call(viewer, &args).await?;
    Ok((page.events, page.total_events))
}

/// Reads what a task produced, and its newest events: the part of its diff `diff_at` names,
/// and its answer: `answer` when its status names one, else the start of the stored output or
/// the last text the agent wrote. Each output is read on its own, in a part that passes the
/// tool output cap whole (nothing cut, nothing spilled to disk).
pub(crate) async fn outcome(
    dashboard: &Dashboard,
    viewer: &Viewer,
    id: &TaskId,
    answer: Option<String>,
    diff_at: &DiffAt,
) -> Result<(Outcome, Vec<EventView>), ToolError> {
    let mut args = GetTaskHistoryArgs {
        agent_id: None,
        task_id: id.clone(),
        events_offset: None,
        events_limit: Some(EVENTS_SHOWN as u32),
        include_artifacts: None,
        artifact: None,
        artifact_offset: None,
    };
    let mut history = dashboard.tools.call(viewer, &args).await?;
    if history.total_events > EVENTS_SHOWN {
        args.events_offset = Some(history.total_events - EVENTS_SHOWN);
        history = dashboard.tools.call(viewer, &args).await?;
    }
    let answer = match answer {
        Some(answer) => Some(answer),
        None => diff_part::read(dashboard, viewer, id, ArtifactKind::Output, 0)
            .await?
            .map(|a| a.content)
            .filter(|text| !text.trim().is_empty())
            .or_else(|| task_view::last_text(&history.events)),
    };
    let diff = diff_part::read(dashboard, viewer, id, ArtifactKind::Diff, diff_at.offset).await?;
    let found = Outcome {
        answer,
        diff,
        diff_at: diff_at.clone(),
        verdicts: history
            .events
            .iter()
            .filter(|e| e.kind == handoff_protocol::EventKind::Verdict)
            .cloned()
            .collect(),
    };
    Ok((found, history.events))
}

/// `GET /tasks/{id}`: one task, live (`?diff_offset=…`: a later part of its diff).
pub(crate) async fn task_page(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    Path(raw): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let id = match task_id(&raw) {
        Ok(id) => id,
        Err(refused) => return refused.page(),
    };
    let diff_at = match DiffAt::parse(query.as_deref()) {
        Ok(at) => at,
        Err(refused) => return refused.page(),
    };
    let loaded = async {
        let state = status(&dashboard, &viewer, &id).await?;
        let (found, events) =
            outcome(&dashboard, &viewer, &id, state.answer.clone(), &diff_at).await?;
        Ok::<_, ToolError>((state, found, events))
    };
    match loaded.await {
        Ok((state, found, events)) => views::respond(
            StatusCode::OK,
            task_view::task_page(&viewer, &state, &found, &events),
        ),
        Err(error) => tool_failure(&error),
    }
}

/// `GET /tasks/{id}/files?path=…`: a directory of the task's working directory.
pub(crate) async fn files(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    Path(raw): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let id = match task_id(&raw) {
        Ok(id) => id,
        Err(refused) => return refused.page(),
    };
    let dir = query_value(query.as_deref(), "path").filter(|p| !p.is_empty());
    let args = GetTaskFilesArgs {
        agent_id: None,
        task_id: id.clone(),
        path: dir.clone(),
    };
    match dashboard.tools.call(&viewer, &args).await {
        Ok(listing) => views::respond(
            StatusCode::OK,
            views::files(&viewer, id.as_str(), dir.as_deref(), &listing),
        ),
        Err(error) => tool_failure(&error),
    }
}

/// `GET /tasks/{id}/file?path=…`: one file (its first 256 KiB).
pub(crate) async fn file(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    Path(raw): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let id = match task_id(&raw) {
        Ok(id) => id,
        Err(refused) => return refused.page(),
    };
    let Some(path) = query_value(query.as_deref(), "path").filter(|p| !p.is_empty()) else {
        return views::error_page(StatusCode::BAD_REQUEST, "Query parameter `path`: required.");
    };
    let args = ReadTaskFileArgs {
        agent_id: None,
        task_id: id.clone(),
        file_path: path,
        offset: None,
        max_bytes: Some(FILE_BYTES),
    };
    match dashboard.tools.call(&viewer, &args).await {
        Ok(read) => views::respond(StatusCode::OK, views::file(&viewer, id.as_str(), &read)),
        Err(error) => tool_failure(&error),
    }
}

/// `GET /login`: the login form (an open dashboard needs none: back to the list).
pub(crate) async fn login_form(State(dashboard): State<Arc<Dashboard>>) -> Response {
    if dashboard.access == super::Access::Open {
        return axum::response::Redirect::to("/").into_response();
    }
    views::respond(StatusCode::OK, views::login(None))
}
