//! The actions: log in and out, and the task tools that change something (control, approval,
//! message), each checked for its origin and its body's size before it is read.

use std::sync::Arc;

use axum::{
    Extension, Json,
    body::Body,
    extract::{Path, State},
    response::{IntoResponse, Redirect, Response},
};
use handoff_protocol::{
    MessageType, ToolCall,
    tasks::{
        AnswerDecision, AnswerScope, ApprovalAnswer, ControlAction, SendTaskControlArgs,
        SendTaskMessageArgs,
    },
};
use handoff_task::TaskId;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;

use super::{
    Access, Dashboard,
    auth::{self, Viewer},
    forms::{self, Fields, Refused},
    pages, review, task_view, views, wants_html,
};

/// Characters of a control's reason (as `send_task_control` allows).
const REASON_CHARS: usize = 2000;
/// Characters of a message (as `send_task_message` allows).
const MESSAGE_CHARS: usize = 65536;

/// A refusal as the client wants it: a page for a browser, JSON for a script.
pub(crate) fn refused(headers: &HeaderMap, refusal: &Refused) -> Response {
    if wants_html(headers) {
        views::error_page(refusal.status, &refusal.message)
    } else {
        (refusal.status, Json(json!({"error": refusal.message}))).into_response()
    }
}

/// Checks the origin and reads the fields of a state-changing request.
pub(crate) async fn accept(
    dashboard: &Dashboard,
    headers: &HeaderMap,
    viewer: Option<&Viewer>,
    body: Body,
) -> Result<Fields, Response> {
    // The origin is checked before the body is read; the CSRF token is in the body, so a
    // request without Origin is read (capped) first.
    if forms::same_origin(headers) == Some(false) {
        return Err(refused(
            headers,
            &forms::check_origin(headers, viewer, &Fields::default())
                .err()
                .unwrap_or_else(|| Refused::field("origin", "not this dashboard")),
        ));
    }
    let fields = forms::read(
        headers,
        body,
        dashboard.max_body,
        dashboard.policy.body_read_timeout(),
    )
    .await
    .map_err(|r| refused(headers, &r))?;
    forms::check_origin(headers, viewer, &fields).map_err(|r| refused(headers, &r))?;
    Ok(fields)
}

/// The task an action names (checked before its body is read) and the action's fields.
async fn task_form(
    dashboard: &Dashboard,
    headers: &HeaderMap,
    viewer: &Viewer,
    raw: &str,
    body: Body,
) -> Result<(TaskId, Fields), Response> {
    let id = pages::task_id(raw).map_err(|refusal| refused(headers, &refusal))?;
    let fields = accept(dashboard, headers, Some(viewer), body).await?;
    Ok((id, fields))
}

/// Calls a task tool for an action and answers: back to the task page for a browser, the
/// tool's result as JSON for a script.
async fn act<A: ToolCall>(
    dashboard: &Dashboard,
    headers: &HeaderMap,
    viewer: &Viewer,
    args: A,
    task: &str,
) -> Response
where
    A::Output: serde::Serialize,
{
    match dashboard.tools.call(viewer, &args).await {
        Ok(_) if wants_html(headers) => Redirect::to(&views::task_href(task, "")).into_response(),
        Ok(output) => Json(json!({"ok": true, "result": output})).into_response(),
        Err(error) if wants_html(headers) => pages::tool_failure(&error),
        Err(error) => {
            let status = pages::tool_failure(&error).status();
            (
                status,
                Json(json!({"error": error.to_string(), "code": error.code()})),
            )
                .into_response()
        }
    }
}

/// The control form's action, read as the tool's own [`ControlAction`], and its reason.
fn control_form(fields: &Fields) -> Result<(ControlAction, Option<String>), Refused> {
    let control = fields.required_choice("control", "expected cancel, pause or resume")?;
    let reason = fields.get("reason").filter(|r| !r.trim().is_empty());
    if reason.is_some_and(|r| r.chars().count() > REASON_CHARS) {
        return Err(Refused::field("reason", "longer than 2000 characters"));
    }
    Ok((control, reason.map(str::to_owned)))
}

/// `POST /tasks/{id}/control`: cancel, pause or resume (`send_task_control`).
pub(crate) async fn control(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (id, fields) = match task_form(&dashboard, &headers, &viewer, &raw, body).await {
        Ok(admitted) => admitted,
        Err(response) => return response,
    };
    let (control, reason) = match control_form(&fields) {
        Ok(parsed) => parsed,
        Err(refusal) => return refused(&headers, &refusal),
    };
    // A browser's cancel is asked about first (the script asks itself and sends `confirm`);
    // a script's is not, as before.
    if control == ControlAction::Cancel
        && wants_html(&headers)
        && fields.get("confirm") != Some("yes")
    {
        return match pages::status(&dashboard, &viewer, &id).await {
            Ok(state) => views::respond(StatusCode::OK, task_view::confirm_cancel(&viewer, &state)),
            Err(error) => pages::tool_failure(&error),
        };
    }
    let args =
        SendTaskControlArgs {
            agent_id: None,
            task_id: id.clone(),
            control,
            reason: Some(reason.unwrap_or_else(|| {
                format!("requested by {} in the dashboard", viewer.name.as_str())
            })),
        };
    act(&dashboard, &headers, &viewer, args, id.as_str()).await
}

/// The approval message `send_task_message` reads, from the form's fields.
fn approval(fields: &Fields) -> Result<String, Refused> {
    let scope: Option<AnswerScope> = fields.choice("scope", "expected once, task or project")?;
    let decision = fields.required_choice("decision", "expected allow or deny")?;
    let (answer, said) = match decision {
        AnswerDecision::Allow => (
            ApprovalAnswer::allow(scope.unwrap_or_default()),
            "approved in the dashboard",
        ),
        AnswerDecision::Deny => (ApprovalAnswer::deny(), "denied in the dashboard"),
    };
    let mut answer = answer.with_message(Some(said.to_owned()));
    if let Some(request) = fields.get("request_id").filter(|r| !r.is_empty()) {
        let plain = request.len() <= 200
            && request
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
        if !plain {
            return Err(Refused::field("request_id", "not a request id"));
        }
        answer.request_id = Some(request.to_owned());
    }
    Ok(answer.to_message())
}

/// `POST /tasks/{id}/approve`: answer a pending permission request (`send_task_message`,
/// message_type approval).
pub(crate) async fn approve(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (id, fields) = match task_form(&dashboard, &headers, &viewer, &raw, body).await {
        Ok(admitted) => admitted,
        Err(response) => return response,
    };
    let message = match approval(&fields) {
        Ok(message) => message,
        Err(refusal) => return refused(&headers, &refusal),
    };
    let args = SendTaskMessageArgs {
        agent_id: None,
        task_id: id.clone(),
        message,
        message_type: Some(MessageType::Approval),
        metadata: None,
    };
    act(&dashboard, &headers, &viewer, args, id.as_str()).await
}

/// The message a form sends: its `message`, then its line `comments` written as a list;
/// one of them is required.
fn message_text(fields: &Fields) -> Result<String, Refused> {
    let note = fields.get("message").filter(|m| !m.trim().is_empty());
    let comments = match fields.get("comments").filter(|c| !c.trim().is_empty()) {
        Some(json) => Some(review::parse(json)?).filter(|c| !c.is_empty()),
        None => None,
    };
    let text = match (note, comments) {
        (None, None) => return Err(Refused::field("message", "required")),
        (Some(note), None) => note.to_owned(),
        (None, Some(comments)) => review::message(&comments),
        (Some(note), Some(comments)) => format!("{note}\n\n{}", review::message(&comments)),
    };
    if text.chars().count() > MESSAGE_CHARS {
        return Err(Refused::field("message", "longer than 65536 characters"));
    }
    Ok(text)
}

/// `POST /tasks/{id}/message`: tell the agent something (`send_task_message`): while it
/// works, at once; once it has ended, as the start of a follow-up round.
pub(crate) async fn message(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (id, fields) = match task_form(&dashboard, &headers, &viewer, &raw, body).await {
        Ok(admitted) => admitted,
        Err(response) => return response,
    };
    let text = match message_text(&fields) {
        Ok(text) => text,
        Err(refusal) => return refused(&headers, &refusal),
    };
    let args = SendTaskMessageArgs {
        agent_id: None,
        task_id: id.clone(),
        message: text,
        message_type: None,
        metadata: None,
    };
    act(&dashboard, &headers, &viewer, args, id.as_str()).await
}

/// A redirect that also sets a cookie.
fn redirect_with_cookie(to: &str, cookie: &str) -> Response {
    let mut response = Redirect::to(to).into_response();
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /login`: an operator token becomes a session cookie; any other token is refused
/// with what it is.
pub(crate) async fn login(
    State(dashboard): State<Arc<Dashboard>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if dashboard.access == Access::Open {
        return Redirect::to("/").into_response();
    }
    let fields = match accept(&dashboard, &headers, None, body).await {
        Ok(fields) => fields,
        Err(response) => return response,
    };
    let token = match fields.required("token") {
        Ok(token) => token.trim(),
        Err(refusal) => return refused(&headers, &refusal),
    };
    let operator = match auth::operator_for(&dashboard, token) {
        Ok(operator) => operator,
        Err(refusal) => {
            return views::respond(refusal.status(), views::login(Some(&refusal.message())));
        }
    };
    match dashboard.sessions.create(operator) {
        Some(id) => {
            let ttl = dashboard.sessions.ttl();
            let cookie = auth::session_cookie(&id, ttl, dashboard.secure_cookies);
            redirect_with_cookie("/", &cookie)
        }
        None => views::error_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "No session could be made: the system has no randomness to give.",
        ),
    }
}

/// `POST /logout`: ends the login.
pub(crate) async fn logout(
    State(dashboard): State<Arc<Dashboard>>,
    Extension(viewer): Extension<Viewer>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(response) = accept(&dashboard, &headers, Some(&viewer), body).await {
        return response;
    }
    if let Some(id) = auth::cookie_value(&headers, auth::COOKIE) {
        dashboard.sessions.remove(id);
    }
    redirect_with_cookie("/login", &auth::cleared_cookie())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_read_as_the_tools_action() {
        let form = |body: &[u8]| control_form(&Fields::parse(None, body).unwrap());
        assert_eq!(
            form(b"control=cancel&reason=done").unwrap(),
            (ControlAction::Cancel, Some("done".to_owned()))
        );
        assert_eq!(
            form(b"control=pause&reason=+").unwrap(),
            (ControlAction::Pause, None)
        );
        assert_eq!(form(b"control=resume").unwrap().0, ControlAction::Resume);
        let long = format!("control=cancel&reason={}", "x".repeat(REASON_CHARS + 1));
        for (body, field) in [
            (&b"control=Cancel"[..], "control"),
            (b"control=stop%21", "control"),
            (b"control=", "control"),
            (b"reason=why", "control"),
            (long.as_bytes(), "reason"),
        ] {
            let refusal = form(body).unwrap_err();
            assert!(
                refusal.message.starts_with(&format!("field `{field}`")),
                "{}",
                refusal.message
            );
            assert!(!refusal.message.contains("stop") && !refusal.message.contains("Cancel"));
        }
    }

    #[test]
    fn messages_are_a_note_review_comments_or_both() {
        let text = |body: &str| message_text(&Fields::parse(None, body.as_bytes()).unwrap());
        assert_eq!(text("message=+hello").unwrap(), " hello");
        let comments = r#"[{"file":"a.py","line":2,"side":"new","text":"x = 1","comment":"why?"}]"#;
        let encoded = serde_urlencoded::to_string([("comments", comments)]).unwrap();
        assert_eq!(
            text(&encoded).unwrap(),
            "Review comments:\n- a.py:2 (`x = 1`): why?"
        );
        assert_eq!(
            text(&format!("message=Also&{encoded}")).unwrap(),
            "Also\n\nReview comments:\n- a.py:2 (`x = 1`): why?"
        );
        for (body, field) in [
            ("message=+&comments=", "message"),
            ("comments=%5B%5D", "message"),
            ("comments=%7Bbad", "comments"),
        ] {
            let refusal = text(body).unwrap_err();
            assert!(
                refusal.message.starts_with(&format!("field `{field}`")),
                "{}",
                refusal.message
            );
        }
        let long = format!("message={}", "x".repeat(MESSAGE_CHARS + 1));
        assert!(text(&long).is_err());
    }

    #[test]
    fn approvals_are_built_from_checked_fields() {
        let fields =
            Fields::parse(None, b"decision=allow&scope=project&request_id=per_123").unwrap();
        let message: serde_json::Value = serde_json::from_str(&approval(&fields).unwrap()).unwrap();
        assert_eq!(message["decision"], "allow");
        assert_eq!(message["scope"], "project");
        assert_eq!(message["request_id"], "per_123");
        let once = Fields::parse(None, b"decision=deny").unwrap();
        assert!(approval(&once).unwrap().contains("\"scope\":\"once\""));
        for (body, field) in [
            (&b"decision=maybe"[..], "decision"),
            (b"decision=allow&scope=forever", "scope"),
            (b"decision=allow&request_id=%22%7D%2C%22x", "request_id"),
            (b"scope=once", "decision"),
        ] {
            let refusal = approval(&Fields::parse(None, body).unwrap()).unwrap_err();
            assert!(
                refusal.message.starts_with(&format!("field `{field}`")),
                "{}",
                refusal.message
            );
            assert!(!refusal.message.contains("forever") && !refusal.message.contains("maybe"));
        }
    }
}
