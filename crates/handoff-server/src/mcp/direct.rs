//! Requests answered before rmcp's session machinery. In a session, rmcp hands every request
//! to the session's worker task, which hands it to the service task, which spawns a task for
//! the handler, and sends the answer back the same way as an SSE stream: four task hops and
//! a dozen allocations around a `ping`. The requests that need none of it are answered here,
//! in the connection's own task, by the same handler code: `ping`, `tools/list` (from bytes
//! serialised once) and `tools/call` of a read-only tool with nothing to send but its answer.
//!
//! Only the plain case is taken: a session whose handshake is complete, headers that rmcp
//! would accept without a second look, a body that is one such request. Anything else —
//! another method, a progress token, a tool that changes state, an unusual header, a
//! session not yet initialized — goes on to rmcp unchanged, which answers or refuses it as
//! before. Nothing here is durable; the session book records the use.

use std::sync::Arc;

use axum::{body::Body, extract::Request, response::Response};
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, ErrorData, GetMeta, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{CappedSessions, HandoffMcp, handler::CallSite};
use crate::edge::{CallerIdentity, DroppedParams, ParsedBody};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// The first revision without sessions; a session never negotiates it, but if one did, its
/// requests would need rmcp's header checks.
const STATELESS_ERA: &str = "2026-07-28";
/// The `_meta` keys by which a request negotiates its own revision (the stateless era).
const PER_REQUEST_META: &str = "io.modelcontextprotocol/";

/// Answers the plain requests of complete sessions (see the module doc).
pub(crate) struct DirectAnswers {
    sessions: Arc<CappedSessions>,
    handler: HandoffMcp,
}

/// A request this path serves, read.
struct Plan {
    session: String,
    id: RequestId,
    identity: CallerIdentity,
    kind: Kind,
}

/// Which of the served requests it is.
enum Kind {
    Ping,
    /// `tools/list`, with the caller's serialised answer.
    List(Bytes),
    Call(Box<CallToolRequestParams>),
}

/// What a request is answered with.
enum Answer {
    /// A result rmcp's types serialise.
    Result(Box<ServerResult>),
    /// A result already serialised.
    Serialised(Bytes),
    /// A JSON-RPC error.
    Error(ErrorData),
}

impl DirectAnswers {
    /// Answers for `sessions`' requests with `handler`'s code.
    pub(crate) fn new(sessions: Arc<CappedSessions>, handler: HandoffMcp) -> Self {
        Self { sessions, handler }
    }

    /// The answer to `request` if it is one this path serves; else the request, untouched,
    /// for rmcp.
    pub(crate) async fn answer(&self, request: Request) -> Result<Response, Request> {
        let Some(plan) = self.plan(&request) else {
            return Err(request);
        };
        drop(request);
        self.sessions.mark_used(&plan.session);
        let answer = match plan.kind {
            Kind::Ping => Answer::Result(Box::new(ServerResult::empty(()))),
            Kind::List(list) => Answer::Serialised(list),
            Kind::Call(params) => {
                let site = CallSite {
                    identity: plan.identity,
                    session: Some(plan.session.clone()),
                    request_id: plan.id.to_string(),
                    // The call ends with this future: a client that goes away drops it.
                    cancel: CancellationToken::new(),
                    as_task: false,
                    observer: None,
                    progress: None,
                };
                match self.handler.run_call(site, *params).await {
                    Ok(response) => Answer::Result(Box::new(ServerResult::from(response))),
                    Err(error) => Answer::Error(error),
                }
            }
        };
        self.sessions.mark_active(&plan.session);
        Ok(json_response(plan.id, answer))
    }

    /// What to do for `request`, if this path serves it.
    fn plan(&self, request: &Request) -> Option<Plan> {
        if request.method() != Method::POST {
            return None;
        }
        let session = self.plain_session(request.headers())?;
        let body = request.extensions().get::<ParsedBody>()?;
        let ClientJsonRpcMessage::Request(message) =
            ClientJsonRpcMessage::deserialize(body.0.as_ref()).ok()?
        else {
            return None;
        };
        // rmcp moves `_meta` out of the params into the request. A request that negotiates
        // its own revision, or wants progress sent, is rmcp's.
        let meta = message.request.get_meta();
        if meta.get_progress_token().is_some()
            || meta.keys().any(|key| key.starts_with(PER_REQUEST_META))
        {
            return None;
        }
        let identity = request.extensions().get::<CallerIdentity>()?.clone();
        let kind = match message.request {
            ClientRequest::PingRequest(_) => Kind::Ping,
            ClientRequest::ListToolsRequest(_)
                if request.extensions().get::<DroppedParams>().is_none() =>
            {
                Kind::List(self.handler.tool_list(identity.agent.as_ref())?)
            }
            ClientRequest::CallToolRequest(call) if self.handler.answers_inline(&call.params) => {
                Kind::Call(Box::new(call.params))
            }
            _ => return None,
        };
        Some(Plan {
            session,
            id: message.id,
            identity,
            kind,
        })
    }

    /// The session a request names, if its handshake is complete and the request's headers
    /// are ones rmcp would take as they are.
    fn plain_session(&self, headers: &HeaderMap) -> Option<String> {
        let session = headers.get(SESSION_HEADER)?.to_str().ok()?;
        let protocol = self.sessions.ready(session)?;
        let version_fits = headers
            .get(VERSION_HEADER)
            .is_none_or(|v| v.as_bytes() == protocol.as_bytes());
        let fits = protocol.as_str() < STATELESS_ERA
            && version_fits
            && accepts_json_and_sse(headers)
            && is_json(headers);
        fits.then(|| session.to_owned())
    }
}

/// Whether the Accept header names both media types a session POST must accept, plainly
/// (no weights: rmcp weighs those).
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(text) = value.to_str() else {
            return false;
        };
        for item in text.split(',') {
            let (essence, params) = item.split_once(';').unwrap_or((item, ""));
            if !params.trim().is_empty() {
                return false;
            }
            let essence = essence.trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// A result in the shape sessions before 2026-07-28 read, as rmcp's handler leaves it for
/// them: no `resultType: "complete"`, no non-object tool output.
pub(crate) fn legacy_shape(result: &mut ServerResult) {
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
}

/// The answer as one JSON-RPC message in a JSON body (the spec lets a server answer a POST
/// with JSON or SSE; every client reads both).
fn json_response(id: RequestId, answer: Answer) -> Response {
    let body = match answer {
        Answer::Result(mut result) => {
            legacy_shape(&mut result);
            serde_json::to_vec(&ServerJsonRpcMessage::response(*result, id))
        }
        Answer::Error(error) => serde_json::to_vec(&ServerJsonRpcMessage::error(error, Some(id))),
        Answer::Serialised(result) => enveloped(&id, &result),
    };
    match body {
        Ok(body) => {
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => {
            tracing::error!(%error, "an MCP answer did not serialise");
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` around a serialised result, field for field as
/// rmcp's response message serialises.
fn enveloped(id: &RequestId, result: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let id = serde_json::to_vec(id)?;
    let mut out = BytesMut::with_capacity(result.len() + id.len() + 32);
    out.put_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.put_slice(&id);
    out.put_slice(br#","result":"#);
    out.put_slice(result);
    out.put_u8(b'}');
    Ok(out.to_vec())
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ListToolsResult, NumberOrString, Tool};
    use serde_json::Map;

    use super::*;

    #[test]
    fn a_serialised_result_is_enveloped_as_rmcp_serialises_it() {
        let result = ListToolsResult {
            tools: vec![Tool::new("ping", "Answers.", Arc::new(Map::new()))],
            ..ListToolsResult::default()
        };
        for id in [
            NumberOrString::Number(7),
            NumberOrString::String("a\"b".into()),
        ] {
            let bytes = serde_json::to_vec(&result).unwrap();
            let ours: serde_json::Value =
                serde_json::from_slice(&enveloped(&id, &bytes).unwrap()).unwrap();
            let rmcp = serde_json::to_value(ServerJsonRpcMessage::response(
                ServerResult::ListToolsResult(result.clone()),
                id,
            ))
            .unwrap();
            assert_eq!(ours, rmcp);
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn only_a_plain_accept_of_both_types_is_taken() {
        let accept = |v| accepts_json_and_sse(&headers(&[("accept", v)]));
        assert!(accept("application/json, text/event-stream"));
        assert!(accept("text/event-stream,APPLICATION/JSON"));
        assert!(!accept("application/json"), "SSE missing");
        assert!(
            !accept("application/json;q=1, text/event-stream;q=0"),
            "weights"
        );
        assert!(!accept("*/*"), "rmcp decides wildcards");
        assert!(is_json(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
    }
}
