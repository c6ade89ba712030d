//! Security at the HTTP edge of `/mcp`: Host allow-list, exact Origin validation, bearer
//! token, body cap, JSON syntax, caller identity. Every refusal is a JSON-RPC error body.

mod host;
pub(crate) mod jsonrpc;
mod method;
mod origin;

pub(crate) use method::RpcMethod;

use std::sync::Arc;

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use handoff_config::{ServerConfig, TokenRole};
use handoff_tools::AgentId;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;
use tower_http::cors::{AllowOrigin, CorsLayer};

use self::{
    jsonrpc::{INVALID_REQUEST, PARSE_ERROR, SERVER_ERROR, error_response},
    origin::{Origin, OriginRule},
};

/// The caller's agent identity, decided at the edge: the agent a token is bound to, or the
/// `x-agent-id` header of a gateway token (or of an open server without tokens).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallerIdentity {
    /// The agent (or, for an operator, its name).
    pub agent: Option<AgentId>,
    /// An operator token: it sees and steers every task.
    pub operator: bool,
}

/// Why the edge policy could not be built from config.
#[derive(Debug, thiserror::Error)]
#[error("invalid origin rule {0:?}: expected null or scheme://host[:port|:*]")]
pub struct BadOriginRule(String);

/// What the edge enforces, resolved once from config.
#[derive(Debug, Clone)]
pub struct EdgePolicy {
    allowed_hosts: Vec<String>,
    origins: Vec<OriginRule>,
    /// Accepted bearer tokens and whom each stands for; none configured: an open server.
    tokens: Vec<(String, TokenRole)>,
    max_body_bytes: usize,
}

impl EdgePolicy {
    /// Builds the policy; CORS origins are accepted origins too.
    pub fn from_config(config: &ServerConfig) -> Result<Self, BadOriginRule> {
        let origins = config
            .allowed_origins
            .iter()
            .chain(&config.cors_origins)
            .map(|rule| OriginRule::parse(rule).ok_or_else(|| BadOriginRule(rule.clone())))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            allowed_hosts: config.allowed_hosts.clone(),
            origins,
            tokens: config
                .auth_token
                .iter()
                .map(|t| (t.expose().to_owned(), TokenRole::Gateway))
                .chain(
                    config
                        .tokens
                        .0
                        .iter()
                        .map(|g| (g.token.expose().to_owned(), g.role.clone())),
                )
                .collect(),
            max_body_bytes: usize::try_from(config.max_body_bytes.bytes()).unwrap_or(usize::MAX),
        })
    }

    /// The body cap in bytes.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }
}

fn forbidden(message: &str) -> Response {
    error_response(StatusCode::FORBIDDEN, SERVER_ERROR, message, Value::Null)
}

fn unauthorized(message: &str, invalid: bool) -> Response {
    let mut response = error_response(StatusCode::UNAUTHORIZED, SERVER_ERROR, message, Value::Null);
    let challenge = if invalid {
        "Bearer realm=\"handoff\", error=\"invalid_token\""
    } else {
        "Bearer realm=\"handoff\""
    };
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}

fn too_large(max: usize) -> Response {
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        INVALID_REQUEST,
        format!("request body is larger than the {max}-byte limit"),
        Value::Null,
    )
}

/// Compares secrets in time independent of where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn header_str(request: &Request, name: header::HeaderName) -> Result<Option<&str>, ()> {
    match request.headers().get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| ()),
    }
}

/// Checks Host, Origin, token and identity, then caps and syntax-checks the body.
pub(crate) async fn guard(
    State(policy): State<Arc<EdgePolicy>>,
    mut request: Request,
    next: Next,
) -> Response {
    let host = header_str(&request, header::HOST)
        .ok()
        .flatten()
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    match host {
        Some(host) if host::host_allowed(&policy.allowed_hosts, &host) => {}
        Some(_) => return forbidden("Forbidden: Host header is not allowed"),
        None => return forbidden("Forbidden: Host header is missing"),
    }

    match header_str(&request, header::ORIGIN) {
        Err(()) => return forbidden("Forbidden: Origin header is not valid text"),
        Ok(Some(value)) => {
            let ok =
                Origin::parse(value).is_some_and(|o| policy.origins.iter().any(|r| r.matches(&o)));
            if !ok {
                return forbidden("Forbidden: Origin is not allowed");
            }
        }
        Ok(None) => {}
    }

    let role = if policy.tokens.is_empty() {
        TokenRole::Gateway
    } else {
        match header_str(&request, header::AUTHORIZATION) {
            Ok(Some(value)) => {
                let presented = value.strip_prefix("Bearer ").unwrap_or_default();
                // Every token is compared, so the time taken says nothing about which matched.
                let matched = policy
                    .tokens
                    .iter()
                    .filter(|(token, _)| constant_time_eq(presented.as_bytes(), token.as_bytes()))
                    .fold(None, |found, (_, role)| found.or(Some(role.clone())));
                match matched {
                    Some(role) => role,
                    None => return unauthorized("Unauthorized: invalid bearer token", true),
                }
            }
            _ => return unauthorized("Unauthorized: bearer token required", false),
        }
    };

    let header = match request.headers().get("x-agent-id").map(|v| v.to_str()) {
        None => None,
        Some(Ok(text)) => match AgentId::parse(text) {
            Ok(agent) => Some(agent),
            Err(e) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    INVALID_REQUEST,
                    format!("x-agent-id header: {e}"),
                    Value::Null,
                );
            }
        },
        Some(Err(_)) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "x-agent-id header is not valid text",
                Value::Null,
            );
        }
    };
    let identity = match (role, header) {
        // A token bound to one agent speaks for that agent only.
        (TokenRole::Agent(bound), Some(claimed)) if claimed != bound => {
            return forbidden("Forbidden: x-agent-id is not the agent this token belongs to");
        }
        (TokenRole::Agent(bound), _) => CallerIdentity {
            agent: Some(bound),
            operator: false,
        },
        (TokenRole::Gateway, header) => CallerIdentity {
            agent: header,
            operator: false,
        },
        // An operator acts as itself; whose tasks it means is an argument of each call.
        (TokenRole::Operator(name), _) => CallerIdentity {
            agent: Some(name),
            operator: true,
        },
    };
    request.extensions_mut().insert(identity);

    let mut method = RpcMethod::for_http(request.method());
    if request.method() == Method::POST {
        request = match checked_body(request, policy.max_body_bytes).await {
            Ok((request, rpc)) => {
                method = rpc;
                request
            }
            Err(response) => return response,
        };
    }
    let mut response = next.run(request).await;
    response.extensions_mut().insert(method);
    response
}

/// Reads the body up to the cap and rejects what is not JSON, before any MCP machinery runs.
async fn checked_body(request: Request, max: usize) -> Result<(Request, RpcMethod), Response> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(too_large(max));
    }
    let (parts, body) = request.into_parts();
    let bytes: Bytes = match Limited::new(body, max).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error)
            if error
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err(too_large(max));
        }
        Err(error) => {
            return Err(error_response(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                format!("could not read request body: {error}"),
                Value::Null,
            ));
        }
    };
    let method = match serde_json::from_slice::<Value>(&bytes) {
        Ok(message) => RpcMethod::of(&message),
        Err(error) => {
            return Err(error_response(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                format!("Parse error: request body is not valid JSON ({error})"),
                Value::Null,
            ));
        }
    };
    Ok((Request::from_parts(parts, Body::from(bytes)), method))
}

/// CORS headers for the configured exact origins only; `None` when there are none.
pub(crate) fn cors_layer(config: &ServerConfig) -> Option<CorsLayer> {
    let origins: Vec<HeaderValue> = config
        .cors_origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    if origins.is_empty() {
        return None;
    }
    let headers = [
        "content-type",
        "authorization",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
        "x-agent-id",
    ]
    .map(header::HeaderName::from_static);
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
            .allow_headers(headers)
            .expose_headers([header::HeaderName::from_static("mcp-session-id")]),
    )
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
