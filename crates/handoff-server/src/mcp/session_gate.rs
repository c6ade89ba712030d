//! The HTTP side of the sessions: a session answers only the caller that opened it (anyone
//! else meets an unknown session); an `initialize` past a limit ends a session to make room
//! (the caller's own least recent one, or one long quiet), else is refused with a clear
//! JSON-RPC error and a true `Retry-After` (429 for the caller's share, 503 for the server's);
//! a stateless `initialize` is a method 2026-07-28 lacks; DELETE answers 404 for a session that
//! is not open and 200 when it ends one; and a session that negotiated a revision before
//! 2025-11-25 gets no SSE priming events (see [`super::priming`]). It also tells the session
//! book what keeps a session alive: the end of the handshake, and every message the server
//! sends on a session's streams.

use std::{sync::Arc, time::Duration};

use axum::{extract::Request, response::Response};
use futures::StreamExt;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::Value;

use super::{
    priming,
    sessions::{CappedSessions, ClientKey, NoRoom, Refusal},
};
use crate::edge::{
    CallerIdentity, ParsedBody, RpcMethod, diagnose,
    jsonrpc::{METHOD_NOT_FOUND, SERVER_ERROR, SESSION_NOT_FOUND, error_response},
};

use crate::headers::SESSION_ID as SESSION_HEADER;

/// Admits `initialize` within the limits, answers DELETE as the spec says, and keeps priming
/// events from sessions that cannot read them; `next` is the MCP service.
pub(crate) async fn session_gate<F, Fut>(
    sessions: &Arc<CappedSessions>,
    request: Request,
    next: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    // Any session header counts as naming one, readable or not: an unreadable one must not
    // pass for "no session" (a DELETE skipping the gate, an initialize opening one).
    let names_one = request.headers().contains_key(SESSION_HEADER);
    let named = session_of(request.headers());
    let finishes_handshake = request
        .extensions()
        .get::<RpcMethod>()
        .is_some_and(|method| method.0 == "notifications/initialized");
    let response = match *request.method() {
        Method::DELETE if names_one => end_session(sessions, request, next).await,
        Method::POST if !names_one && opens_session(&request) => {
            open_session(sessions, request, next).await
        }
        _ => next(request).await,
    };
    if finishes_handshake
        && response.status().is_success()
        && let Some(id) = &named
    {
        sessions.mark_initialized(id);
    }
    // An `initialize` learns its session from the answer.
    let Some(session) = named.or_else(|| session_of(response.headers())) else {
        return response;
    };
    if !priming::is_event_stream(&response) {
        return response;
    }
    let response = match sessions.negotiated(&session) {
        Some(protocol) if !priming::reads_priming(&protocol) => priming::without_priming(response),
        _ => response,
    };
    keeps_alive(sessions, session, response)
}

/// `request` with the session it names hidden when another caller opened that session: the
/// rest of the way (the direct answers, the gate, rmcp) sees a session that does not exist,
/// so the answer is the 404 of any unknown session, and nothing of the session — its
/// prompts, its answers, its end — is reachable by a caller that did not open it.
pub(crate) fn unless_foreign(sessions: &CappedSessions, mut request: Request) -> Request {
    let Some(named) = session_of(request.headers()) else {
        return request;
    };
    let caller = ClientKey::of(request.extensions().get::<CallerIdentity>());
    if sessions.opened_by_another(&named, &caller) {
        sessions.note_foreign_use();
        request
            .headers_mut()
            .insert(SESSION_HEADER, HeaderValue::from_static(NO_SUCH_SESSION));
    }
    request
}

/// A session id no session ever has (rmcp's ids are UUIDs).
const NO_SUCH_SESSION: &str = "not-a-session";

/// The stream with every message it carries counted as activity of `session`, as rmcp's own
/// idle timer counted them; keep-alive comments and priming events are not messages.
fn keeps_alive(sessions: &Arc<CappedSessions>, session: String, response: Response) -> Response {
    let sessions = Arc::downgrade(sessions);
    let (parts, body) = response.into_parts();
    let events = body.into_data_stream().inspect(move |chunk| {
        if chunk.as_ref().is_ok_and(priming::is_message)
            && let Some(sessions) = sessions.upgrade()
        {
            sessions.mark_active(&session);
        }
    });
    Response::from_parts(parts, axum::body::Body::from_stream(events))
}

/// The session a request or an answer names.
fn session_of(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A POST without a session that asks for one (the edge labelled its body).
fn opens_session(request: &Request) -> bool {
    request
        .extensions()
        .get::<RpcMethod>()
        .is_some_and(|method| method.0 == "initialize")
}

/// The answer to an `initialize` that carries the 2026-07-28 `_meta` protocol version — a
/// stateless request, in a revision that has no `initialize` — as every method that revision
/// lacks is answered, with the way to what the client wants; `None` for any other request.
/// Read before the direct answers, which take the parsed body.
pub(crate) fn stateless_initialize(request: &Request) -> Option<Response> {
    if request.method() != Method::POST || !opens_session(request) {
        return None;
    }
    let body = &request.extensions().get::<ParsedBody>()?.0;
    body["params"]["_meta"].get("io.modelcontextprotocol/protocolVersion")?;
    Some(error_response(
        StatusCode::NOT_FOUND,
        METHOD_NOT_FOUND,
        "Method not found: `initialize` is not part of MCP 2026-07-28 (stateless): call \
         `server/discover`; to open a session instead, send `initialize` without the 2026-07-28 \
         `_meta` protocolVersion",
        diagnose::reply_id(body),
    ))
}

async fn open_session<F, Fut>(sessions: &CappedSessions, request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let client = ClientKey::of(request.extensions().get::<CallerIdentity>());
    if let Err(no_room) = sessions.make_room(&client).await {
        return refused(sessions, &no_room);
    }
    match sessions.admitted(client, next(request)).await {
        // Another `initialize` took the place just made; one is made again at once.
        (_, Some(refusal)) => refused(
            sessions,
            &NoRoom {
                refusal,
                retry_after: Duration::from_secs(1),
            },
        ),
        (response, None) => response,
    }
}

fn refused(sessions: &CappedSessions, no_room: &NoRoom) -> Response {
    sessions.note_refusal(&no_room.refusal);
    let status = match no_room.refusal {
        Refusal::PerClient { .. } => StatusCode::TOO_MANY_REQUESTS,
        Refusal::Total { .. } => StatusCode::SERVICE_UNAVAILABLE,
    };
    let message = no_room.refusal.to_string();
    let mut response = error_response(status, SERVER_ERROR, message, Value::Null);
    // Whole seconds, rounded up: a retry that early would only be refused again.
    let retry = no_room.retry_after.as_secs() + u64::from(no_room.retry_after.subsec_nanos() > 0);
    if let Ok(value) = HeaderValue::from_str(&retry.max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

async fn end_session<F, Fut>(sessions: &CappedSessions, request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let open = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|id| sessions.is_open(id));
    if !open {
        return error_response(
            StatusCode::NOT_FOUND,
            SESSION_NOT_FOUND,
            "Session not found: it has already ended (DELETE, idle or unused timeout) or never \
             existed",
            Value::Null,
        );
    }
    let mut response = next(request).await;
    // rmcp answers 202; the MCP SDKs (Python's among them) take 200 or 204 as success.
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}
