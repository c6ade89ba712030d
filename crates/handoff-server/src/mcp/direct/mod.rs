//! Requests answered before rmcp's session machinery. In a session, rmcp hands every request
//! to the session's worker task, which hands it to the service task, which spawns a task for
//! the handler, and sends the answer back the same way as an SSE stream: four task hops and
//! a dozen allocations around a `ping`. The requests that need none of it are answered here,
//! in the connection's own task, by the same handler code: `ping`, `tools/list` (from bytes
//! serialised once) and `tools/call` of a read-only tool with nothing to send but its answer.
//!
//! The 2026-07-28 era has no sessions, but rmcp still builds a one-request service with its
//! own task for each request; its plain `tools/list` and read-only `tools/call` are answered
//! here the same way.
//!
//! Only the plain case is taken ([`fit`]): a session whose handshake is complete or a
//! stateless request with its whole `_meta` and standard headers, headers that rmcp would
//! accept without a second look, a body that is one such request. Anything else — another
//! method, a progress token, a tool that changes state, an unusual header, a session not yet
//! initialized — goes on to rmcp unchanged, which answers or refuses it as before. Nothing
//! here is durable; the session book records the use.

mod fit;
mod read;

use std::sync::Arc;

use axum::{body::Body, extract::Request, response::Response};
use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ErrorData, RequestId, ServerJsonRpcMessage, ServerResult,
};
use tokio_util::sync::CancellationToken;

use self::fit::{Era, era_of, request_fits};
use self::read::served_request;
use super::{CallSite, CappedSessions, HandoffMcp};
use crate::edge::{CallerIdentity, DroppedParams, ParsedBody};

/// Answers the plain requests of complete sessions and of the stateless era (see the module
/// doc).
pub(crate) struct DirectAnswers {
    sessions: Arc<CappedSessions>,
    handler: HandoffMcp,
}

/// A request this path serves, read.
struct Plan {
    era: Era,
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
    pub(crate) async fn answer(&self, mut request: Request) -> Result<Response, Request> {
        let Some(plan) = self.plan(&mut request) else {
            return Err(request);
        };
        drop(request);
        let session = match &plan.era {
            Era::Session(id) => Some(id.clone()),
            Era::Stateless => None,
        };
        if let Some(id) = &session {
            self.sessions.mark_used(id);
        }
        let answer = match plan.kind {
            Kind::Ping => Answer::Result(Box::new(ServerResult::empty(()))),
            Kind::List(list) => Answer::Serialised(list),
            Kind::Call(params) => {
                let site = CallSite {
                    identity: plan.identity,
                    session: session.clone(),
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
        if let Some(id) = &session {
            self.sessions.mark_active(id);
        }
        Ok(json_response(plan.id, &plan.era, answer))
    }

    /// What to do for `request`, if this path serves it. Its parsed body is taken: only this
    /// path reads it (rmcp reads the bytes), and read by value its strings move, not copy.
    fn plan(&self, request: &mut Request) -> Option<Plan> {
        if request.method() != Method::POST {
            return None;
        }
        let era = era_of(request.headers(), |id| self.sessions.ready(id))?;
        let body = request.extensions_mut().remove::<ParsedBody>()?;
        let body = Arc::try_unwrap(body.0).unwrap_or_else(|shared| (*shared).clone());
        let (id, served) = served_request(body)?;
        // rmcp moves `_meta` out of the params into the request.
        if !request_fits(&era, request.headers(), &served) {
            return None;
        }
        let identity = request.extensions().get::<CallerIdentity>()?.clone();
        let kind = match served {
            // 2026-07-28 has no `ping`; rmcp answers that it is unknown.
            ClientRequest::PingRequest(_) if !era.is_modern() => Kind::Ping,
            ClientRequest::ListToolsRequest(_)
                if request.extensions().get::<DroppedParams>().is_none() =>
            {
                Kind::List(
                    self.handler
                        .tool_list(identity.agent.as_ref(), era.is_modern())?,
                )
            }
            ClientRequest::CallToolRequest(call) if self.handler.answers_inline(&call.params) => {
                Kind::Call(Box::new(call.params))
            }
            _ => return None,
        };
        Some(Plan {
            era,
            id,
            identity,
            kind,
        })
    }
}

/// A result in the shape its era reads, as rmcp's handler leaves it: before 2026-07-28 no
/// `resultType: "complete"` and no non-object tool output; from it, caching hints.
pub(crate) fn era_shape(result: &mut ServerResult, modern: bool) {
    if modern {
        result.fill_missing_cache_hints();
    } else {
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
    }
}

/// The answer as one JSON-RPC message in a JSON body (the spec lets a server answer a POST
/// with JSON or SSE; every client reads both).
fn json_response(id: RequestId, era: &Era, answer: Answer) -> Response {
    let body = match answer {
        Answer::Result(mut result) => {
            era_shape(&mut result, era.is_modern());
            to_json(&ServerJsonRpcMessage::response(*result, id))
        }
        Answer::Error(error) => to_json(&ServerJsonRpcMessage::error(error, Some(id))),
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

/// `message` as JSON, into a buffer sized for a typical answer: growing from empty took four
/// reallocations and copies per answer.
fn to_json(message: &ServerJsonRpcMessage) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(1024);
    serde_json::to_writer(&mut out, message)?;
    Ok(out)
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` around a serialised result, field for field as
/// rmcp's response message serialises.
fn enveloped(id: &RequestId, result: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let id = serde_json::to_vec(id)?;
    let mut out = Vec::with_capacity(result.len() + id.len() + 32);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(&id);
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result);
    out.push(b'}');
    Ok(out)
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
}
