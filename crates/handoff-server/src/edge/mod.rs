//! Security at the HTTP edge: Host allow-list and exact Origin validation on every route
//! (`/mcp`, `/health`, `/ready`, `/metrics`); bearer token, body cap and read deadline, JSON
//! syntax and caller identity on `/mcp`. Conflicting copies of a single-valued header are
//! refused, never resolved by picking one. Every refusal is a JSON-RPC error body.

pub(crate) mod diagnose;
mod host;
pub(crate) mod jsonrpc;
mod method;
mod origin;
pub(crate) mod parse_errors;

pub(crate) use method::RpcMethod;

use std::{sync::Arc, time::Duration};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use handoff_config::{DERIVED_TOKEN_PREFIX, Secret, ServerConfig, TokenRole, derived_agent_token};
use handoff_tools::AgentId;
use http::{HeaderName, HeaderValue, Method, StatusCode, header};
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
    allowed_hosts: host::HostRules,
    origins: Vec<OriginRule>,
    /// Accepted bearer tokens and whom each stands for; none configured: an open server.
    tokens: Vec<(String, TokenRole)>,
    max_body_bytes: usize,
    /// How long a request body may take to arrive in full.
    body_read_timeout: Duration,
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
            allowed_hosts: host::HostRules::new(&config.allowed_hosts),
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
            body_read_timeout: config.body_read_timeout,
        })
    }

    /// The body cap in bytes.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// Whom a presented bearer token stands for, if it is one of the configured tokens. Every
    /// token is compared, so the time taken says nothing about which matched.
    pub(crate) fn role_of(&self, presented: &str) -> Option<TokenRole> {
        self.tokens
            .iter()
            .filter(|(token, _)| constant_time_eq(presented.as_bytes(), token.as_bytes()))
            .fold(None, |found, (_, role)| found.or(Some(role.clone())))
    }

    /// Whom a presented token derived from a gateway token stands for: the agent it was
    /// derived for, when that is the agent the request names. Every gateway token is tried,
    /// so the time taken says nothing about which matched.
    pub(crate) fn derived_role(
        &self,
        presented: &str,
        agent: Option<&AgentId>,
    ) -> Option<TokenRole> {
        let agent = agent?;
        if !presented.starts_with(DERIVED_TOKEN_PREFIX) {
            return None;
        }
        let matched = self
            .tokens
            .iter()
            .filter(|(_, role)| *role == TokenRole::Gateway)
            .map(|(token, _)| derived_agent_token(&Secret::new(token.clone()), agent.as_str()))
            .fold(false, |found, expected| {
                constant_time_eq(presented.as_bytes(), expected.expose().as_bytes()) | found
            });
        matched.then(|| TokenRole::Agent(agent.clone()))
    }

    /// How long a request body may take to arrive in full.
    pub(crate) fn body_read_timeout(&self) -> Duration {
        self.body_read_timeout
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

/// A body that did not arrive in time; the connection closes, as the rest of it is unread.
fn body_too_slow(deadline: Duration) -> Response {
    let mut response = error_response(
        StatusCode::REQUEST_TIMEOUT,
        INVALID_REQUEST,
        format!(
            "request body did not arrive within {} s (server.body_read_timeout_secs)",
            deadline.as_secs()
        ),
        Value::Null,
    );
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Compares secrets in time independent of where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn header_str(request: &Request, name: header::HeaderName) -> Result<Option<&str>, ()> {
    match request.headers().get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| ()),
    }
}

/// Headers that carry one value, with their names as error messages spell them. Proxies and
/// gateways append their own copy (a Letta server adds its `X-Agent-Id` after a configured
/// one), so taking either copy would act for someone the other copy did not name.
const SINGLE_VALUED: [(HeaderName, &str); 6] = [
    (header::HOST, "Host"),
    (header::ORIGIN, "Origin"),
    (header::AUTHORIZATION, "Authorization"),
    (crate::headers::AGENT_ID, "x-agent-id"),
    (crate::headers::SESSION_ID, "Mcp-Session-Id"),
    (crate::headers::PROTOCOL_VERSION, "MCP-Protocol-Version"),
];

/// The refusal for a request carrying copies of a single-valued header that differ; identical
/// copies are one value said twice.
fn conflicting_copies(request: &Request) -> Option<Response> {
    SINGLE_VALUED.iter().find_map(|(header, name)| {
        let mut copies = request.headers().get_all(header).iter();
        let first = copies.next()?;
        copies.any(|other| other != first).then(|| {
            error_response(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                format!("{name} header is sent more than once with different values"),
                Value::Null,
            )
        })
    })
}

/// The DNS-rebinding guard every route shares: no conflicting copies, an allowed Host (and
/// URI authority, when the request carries one), and an allowed Origin when one is sent.
/// `None` lets the request through.
fn host_and_origin_refusal(policy: &EdgePolicy, request: &Request) -> Option<Response> {
    if let Some(refusal) = conflicting_copies(request) {
        return Some(refusal);
    }
    let Ok(header) = header_str(request, header::HOST) else {
        return Some(forbidden("Forbidden: Host header is not valid text"));
    };
    let authority = request.uri().authority().map(|a| a.as_str());
    if header.is_none() && authority.is_none() {
        return Some(forbidden("Forbidden: Host header is missing"));
    }
    // An absolute-form target or HTTP/2 `:authority` names a host too; both must be allowed.
    let allowed = |host: Option<&str>| host.is_none_or(|h| policy.allowed_hosts.allow(h));
    if !allowed(header) || !allowed(authority) {
        return Some(forbidden("Forbidden: Host header is not allowed"));
    }
    match header_str(request, header::ORIGIN) {
        Err(()) => Some(forbidden("Forbidden: Origin header is not valid text")),
        Ok(Some(value))
            if !Origin::parse(value)
                .is_some_and(|o| policy.origins.iter().any(|r| r.matches(&o))) =>
        {
            Some(forbidden("Forbidden: Origin is not allowed"))
        }
        Ok(_) => None,
    }
}

/// Guards `/health`, `/ready` and `/metrics` like `/mcp`'s Host and Origin checks (no token:
/// probes stay open to local tools, but a DNS-rebinding page is refused).
pub(crate) async fn host_guard(
    State(policy): State<Arc<EdgePolicy>>,
    request: Request,
    next: Next,
) -> Response {
    match host_and_origin_refusal(&policy, &request) {
        Some(refusal) => refusal,
        None => next.run(request).await,
    }
}

/// The agent the `x-agent-id` header names, if any; what is wrong with it when it names none
/// well.
fn agent_header(request: &Request) -> Result<Option<AgentId>, String> {
    match request
        .headers()
        .get(crate::headers::AGENT_ID)
        .map(|v| v.to_str())
    {
        None => Ok(None),
        Some(Ok(text)) => AgentId::parse(text)
            .map(Some)
            .map_err(|e| format!("x-agent-id header: {e}")),
        Some(Err(_)) => Err("x-agent-id header is not valid text".to_owned()),
    }
}

/// Checks Host, Origin, token and identity, then caps and syntax-checks the body.
pub(crate) async fn guard<F, Fut>(policy: &EdgePolicy, mut request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    if let Some(refusal) = host_and_origin_refusal(policy, &request) {
        return refusal;
    }

    // Read before the token (a derived token is checked against the agent it names), refused
    // after it: a stranger learns nothing from the header's fate.
    let header = agent_header(&request);
    let role = if policy.tokens.is_empty() {
        TokenRole::Gateway
    } else {
        match header_str(&request, header::AUTHORIZATION) {
            Ok(Some(value)) => {
                let presented = value.strip_prefix("Bearer ").unwrap_or_default();
                let named = header.as_ref().ok().and_then(Option::as_ref);
                let role = policy
                    .role_of(presented)
                    .or_else(|| policy.derived_role(presented, named));
                match role {
                    Some(role) => role,
                    None => return unauthorized("Unauthorized: invalid bearer token", true),
                }
            }
            _ => return unauthorized("Unauthorized: bearer token required", false),
        }
    };

    let header = match header {
        Ok(header) => header,
        Err(problem) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                problem,
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
        request = match checked_body(request, policy.max_body_bytes, policy.body_read_timeout).await
        {
            Ok((request, rpc)) => {
                method = rpc;
                request
            }
            Err(response) => return response,
        };
    }
    // The session gate needs to know an `initialize` without parsing the body again.
    request.extensions_mut().insert(method);
    let mut response = next(request).await;
    response.extensions_mut().insert(method);
    response
}

/// What is wrong with the params of a request whose optional params rmcp drops silently when
/// they do not fit (`tools/list {cursor: 5}` would otherwise be answered as if well-formed);
/// the handler refuses the call with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DroppedParams(pub String);

/// A POST body as the edge parsed it, so a request answered before rmcp is not parsed twice.
#[derive(Debug, Clone)]
pub(crate) struct ParsedBody(pub Arc<Value>);

/// Methods whose optional params rmcp reads leniently.
const LENIENT_METHODS: &[&str] = &["tools/list"];

fn dropped_params(message: &Value) -> Option<DroppedParams> {
    let method = message.get("method")?.as_str()?;
    if !LENIENT_METHODS.contains(&method) {
        return None;
    }
    match diagnose::params_check(method, message.get("params")) {
        diagnose::ParamsCheck::Invalid(problem) => Some(DroppedParams(problem)),
        _ => None,
    }
}

/// Reads the body up to the cap and within the read deadline, and rejects what is not JSON,
/// before any MCP machinery runs.
async fn checked_body(
    request: Request,
    max: usize,
    deadline: Duration,
) -> Result<(Request, RpcMethod), Response> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(too_large(max));
    }
    let (parts, body) = request.into_parts();
    let Ok(collected) = tokio::time::timeout(deadline, Limited::new(body, max).collect()).await
    else {
        return Err(body_too_slow(deadline));
    };
    let bytes: Bytes = match collected {
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
    let (method, dropped, message) = match serde_json::from_slice::<Value>(&bytes) {
        Ok(message) => (
            RpcMethod::of(&message),
            dropped_params(&message),
            ParsedBody(Arc::new(message)),
        ),
        Err(error) => {
            return Err(error_response(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                format!("Parse error: request body is not valid JSON ({error})"),
                Value::Null,
            ));
        }
    };
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(message);
    if let Some(dropped) = dropped {
        request.extensions_mut().insert(dropped);
    }
    Ok((request, method))
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
            .expose_headers([crate::headers::SESSION_ID]),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_config::{Config, LoadOptions, Secret, TokenRole, derived_agent_token};
    use handoff_tools::AgentId;

    use super::{EdgePolicy, constant_time_eq};

    #[test]
    fn a_derived_token_speaks_for_its_agent_only_and_only_with_a_gateway_token() {
        let gateway = Secret::new("gateway-token-0123456789");
        let env = [("HANDOFF_AUTH_TOKEN".to_owned(), gateway.expose().to_owned())];
        let config = Config::load(LoadOptions {
            config_file: None,
            default_config_file: None,
            dotenv_file: None,
            env: env.into_iter().collect(),
            cli: Vec::new(),
        })
        .unwrap();
        let policy = EdgePolicy::from_config(&config.server).unwrap();
        let a = AgentId::parse("agent-a").unwrap();
        let b = AgentId::parse("agent-b").unwrap();
        let token = derived_agent_token(&gateway, "agent-a");
        assert_eq!(
            policy.derived_role(token.expose(), Some(&a)),
            Some(TokenRole::Agent(a.clone()))
        );
        assert_eq!(policy.derived_role(token.expose(), Some(&b)), None);
        assert_eq!(policy.derived_role(token.expose(), None), None);
        assert_eq!(
            policy.role_of(token.expose()),
            None,
            "not a configured token"
        );
        let other = derived_agent_token(&Secret::new("some other gateway"), "agent-a");
        assert_eq!(policy.derived_role(other.expose(), Some(&a)), None);
        assert_eq!(policy.derived_role(gateway.expose(), Some(&a)), None);
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
