//! The new-task page: a form that hands a task to an executor with `execute_task`, as the
//! operator looking, offering the executors the server has (from `health`) and the
//! directories it lets a task work in (`tasks.workdir_roots`). Checked like every action: the
//! origin first, then the fields by name, never repeating what was typed.

use std::sync::Arc;

use axum::{
    Extension, Json,
    body::Body,
    extract::State,
    response::{IntoResponse, Redirect, Response},
};
use handoff_protocol::{builtin::HealthArgs, tasks::ExecuteTaskArgs};
use http::{HeaderMap, StatusCode};
use maud::{Markup, html};
use serde_json::json;

use super::{
    Dashboard,
    actions::{accept, refused},
    auth::Viewer,
    forms::{Fields, Refused},
    pages,
    views::{self, csrf_field, page},
    wants_html,
};

/// Characters of a branch name, at most (as `execute_task` takes).
const BRANCH_CHARS: usize = 200;

/// What the form offers to choose from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Offer {
    /// The executors the server has, sorted (empty: unknown, any name is passed on).
    pub(crate) executors: Vec<String>,
    /// The one a task that names none gets.
    pub(crate) default: Option<String>,
    /// The directories a task may be given to work in.
    pub(crate) roots: Vec<String>,
}

/// What the form was filled in with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NewTask {
    /// What the agent should do.
    pub(crate) description: String,
    /// The executor (`None`: the server's default).
    pub(crate) executor: Option<String>,
    /// The directory (`None`: a fresh one).
    pub(crate) workdir: Option<String>,
    /// The new branch to work on (`None`: the server names it).
    pub(crate) branch: Option<String>,
}

impl NewTask {
    /// The fields as typed (empty ones unset), unchecked.
    pub(crate) fn filled(fields: &Fields) -> Self {
        let value = |name| {
            fields
                .get(name)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        Self {
            description: fields.get("description").unwrap_or_default().to_owned(),
            executor: value("executor"),
            workdir: value("workdir"),
            branch: value("branch"),
        }
    }

    /// Refuses a form the server would not take from this page, naming the field.
    pub(crate) fn check(&self, offer: &Offer) -> Result<(), Refused> {
        if self.description.trim().is_empty() {
            return Err(Refused::field("description", "required"));
        }
        if let Some(executor) = &self.executor
            && !offer.executors.is_empty()
            && !offer.executors.contains(executor)
        {
            return Err(Refused::field(
                "executor",
                "not an executor this server offers",
            ));
        }
        if let Some(workdir) = &self.workdir
            && !offer.roots.contains(workdir)
        {
            return Err(Refused::field(
                "workdir",
                "not one of the directories offered",
            ));
        }
        if self
            .branch
            .as_deref()
            .is_some_and(|b| b.chars().count() > BRANCH_CHARS)
        {
            return Err(Refused::field("branch", "longer than 200 characters"));
        }
        Ok(())
    }

    /// The `execute_task` call: for the operator itself, answered at once.
    pub(crate) fn args(&self) -> ExecuteTaskArgs {
        ExecuteTaskArgs {
            task_description: self.description.clone(),
            executor: self.executor.clone(),
            workdir: self.workdir.clone(),
            branch: self.branch.clone(),
            sync: Some(false),
            ..ExecuteTaskArgs::default()
        }
    }
}

/// What the server offers: its executors from `health` (none listed when it cannot say) and
/// the configured roots.
async fn offer(dashboard: &Dashboard, viewer: &Viewer) -> Offer {
    let report = dashboard.tools.call(viewer, &HealthArgs {}).await.ok();
    let executors = report.and_then(|r| r.executors);
    Offer {
        executors: executors
            .as_ref()
            .map(|e| e.available.clone())
            .unwrap_or_default(),
        default: executors.map(|e| e.default),
        roots: dashboard.workdir_roots.clone(),
    }
}

/// The form, filled with `filled`, saying `problem` when the last try failed.
pub(crate) fn form_page(
    viewer: &Viewer,
    offer: &Offer,
    filled: &NewTask,
    problem: Option<&str>,
) -> Markup {
    let body = html! {
        p.crumbs { a href="/" { "← tasks" } }
        h1 { "New task" }
        @if let Some(problem) = problem { p #new-task-error.problem { (problem) } }
        form #new-task.new-task method="post" action="/new" {
            (csrf_field(viewer))
            label for="description" { "What should the agent do?" }
            textarea #description name="description" rows="6" required { (filled.description) }
            label for="executor" { "Executor" }
            select #executor name="executor" {
                option value="" selected[filled.executor.is_none()] {
                    "the server's default" @if let Some(d) = &offer.default { " (" (d) ")" }
                }
                @for name in &offer.executors {
                    option value=(name) selected[filled.executor.as_ref() == Some(name)] { (name) }
                }
            }
            label for="workdir" { "Directory" }
            select #workdir name="workdir" {
                option value="" selected[filled.workdir.is_none()] { "a fresh directory" }
                @for root in &offer.roots {
                    option value=(root) selected[filled.workdir.as_ref() == Some(root)] { (root) }
                }
            }
            label for="branch" { "Branch (optional, new)" }
            input #branch type="text" name="branch" maxlength="200"
                value=(filled.branch.as_deref().unwrap_or_default());
            button type="submit" { "Start the task" }
        }
    };
    page("New task", Some(viewer), body)
}

/// `GET /new`: the empty form.
pub(crate) async fn form(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
) -> Response {
    let offer = offer(&dashboard, &viewer).await;
    views::respond(
        StatusCode::OK,
        form_page(&viewer, &offer, &NewTask::default(), None),
    )
}

/// `POST /new`: submits the task and goes to its page; a refusal or the tool's error comes
/// back on the form, as typed.
pub(crate) async fn submit(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let fields = match accept(&dashboard, &headers, Some(&viewer), body).await {
        Ok(fields) => fields,
        Err(response) => return response,
    };
    let filled = NewTask::filled(&fields);
    let offer = offer(&dashboard, &viewer).await;
    let again = |status: StatusCode, problem: &str| {
        views::respond(status, form_page(&viewer, &offer, &filled, Some(problem)))
    };
    if let Err(refusal) = filled.check(&offer) {
        return if wants_html(&headers) {
            again(refusal.status, &refusal.message)
        } else {
            refused(&headers, &refusal)
        };
    }
    match dashboard.tools.call(&viewer, &filled.args()).await {
        Ok(out) if wants_html(&headers) => {
            Redirect::to(&views::task_href(&out.task_id, "")).into_response()
        }
        Ok(out) => Json(json!({"ok": true, "result": out})).into_response(),
        Err(error) => {
            let status = pages::tool_failure(&error).status();
            if wants_html(&headers) {
                again(status, &error.to_string())
            } else {
                let body = json!({"error": error.to_string(), "code": error.code()});
                (status, Json(body)).into_response()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use handoff_tools::AgentId;

    fn offer() -> Offer {
        Offer {
            executors: vec!["command".into(), "opencode".into()],
            default: Some("opencode".into()),
            roots: vec!["/srv/repos".into()],
        }
    }

    fn read(body: &str) -> NewTask {
        NewTask::filled(&Fields::parse(None, body.as_bytes()).unwrap())
    }

    #[test]
    fn a_filled_form_is_an_execute_task_call() {
        let task =
            read("description=Fix+it&executor=command&workdir=%2Fsrv%2Frepos&branch=+fix%2Fit+");
        assert!(task.check(&offer()).is_ok());
        let args = task.args();
        assert_eq!(args.task_description, "Fix it");
        assert_eq!(args.executor.as_deref(), Some("command"));
        assert_eq!(args.workdir.as_deref(), Some("/srv/repos"));
        assert_eq!(args.branch.as_deref(), Some("fix/it"));
        assert_eq!(args.sync, Some(false));
        let plain = read("description=x&executor=&workdir=&branch=").args();
        assert_eq!(
            (plain.executor, plain.workdir, plain.branch),
            (None, None, None)
        );
    }

    #[test]
    fn fields_are_checked_by_name_without_their_values() {
        let long = format!("description=x&branch={}", "b".repeat(201));
        for (body, field) in [
            ("description=+", "description"),
            ("description=x&executor=%3Cevil%3E", "executor"),
            ("description=x&workdir=%2Fetc", "workdir"),
            (long.as_str(), "branch"),
        ] {
            let refusal = read(body).check(&offer()).unwrap_err();
            assert!(
                refusal.message.starts_with(&format!("field `{field}`")),
                "{}",
                refusal.message
            );
            assert!(!refusal.message.contains("evil") && !refusal.message.contains("etc"));
        }
        // Without a list of executors, any name goes on to the tool, which checks it.
        let unknown = Offer::default();
        assert!(read("description=x&executor=other").check(&unknown).is_ok());
    }

    #[test]
    fn the_form_offers_what_the_server_has_and_keeps_what_was_typed() {
        let viewer = Viewer {
            name: AgentId::parse("op").unwrap(),
            csrf: Some("token".into()),
            bearer: false,
            login: true,
        };
        let filled = read("description=%3Cscript%3E&executor=command&workdir=%2Fsrv%2Frepos");
        let html = form_page(&viewer, &offer(), &filled, Some("<bad>")).into_string();
        assert!(
            html.contains(r#"<option value="command" selected>command</option>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<option value="/srv/repos" selected>/srv/repos</option>"#),
            "{html}"
        );
        assert!(
            html.contains("the server&#39;s default (opencode)")
                || html.contains("the server's default (opencode)"),
            "{html}"
        );
        assert!(html.contains("&lt;script&gt;</textarea>"), "{html}");
        assert!(
            html.contains("&lt;bad&gt;") && !html.contains("<bad>"),
            "{html}"
        );
        assert!(html.contains(r#"name="csrf" value="token""#), "{html}");
    }
}
