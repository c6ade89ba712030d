//! One call through the gateway: check the caller's token and budget, forward to the provider
//! with its key, pass the answer through and count it.

use std::{sync::Arc, time::Instant};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use futures::StreamExt;
use handoff_config::{Config, ModelProvider, ModelWire, ModelsConfig, RouteError};
use handoff_engine::{Engine, GatewayRefusal, ModelCall};
use handoff_llm::{CallUsage, CallWire, UsageScanner};
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::{
    provider_key::ProviderKey,
    request::{self, Peek},
    tap::Tapped,
    wire_error::refusal,
};

/// How long the provider may take to accept the connection (the answer itself may stream for
/// as long as the task runs).
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Response headers passed back to the agent.
const PASSED_BACK: &[&str] = &[
    "content-type",
    "retry-after",
    "x-request-id",
    "request-id",
    "cache-control",
    "anthropic-ratelimit-requests-remaining",
    "x-ratelimit-remaining-requests",
];

/// The providers and what reaches them.
pub(crate) struct GatewayRoute {
    engine: Engine,
    client: reqwest::Client,
    models: ModelsConfig,
    /// Each provider's key, by the provider's place in `models.providers`.
    keys: Vec<ProviderKey>,
}

impl GatewayRoute {
    /// The route to `config`'s providers; `Ok(None)` when no gateway serves.
    pub(crate) fn new(config: &Config, engine: Engine) -> std::io::Result<Option<Self>> {
        if !config.models.gateway_on() {
            return Ok(None);
        }
        // reqwest is built with rustls on the ring provider only.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| std::io::Error::other(format!("the model gateway's HTTP client: {e}")))?;
        Ok(Some(Self {
            engine,
            client,
            keys: config
                .models
                .providers
                .iter()
                .map(ProviderKey::new)
                .collect(),
            models: config.models.clone(),
        }))
    }

    /// The key to send `provider` now.
    fn key(&self, provider: &ModelProvider) -> Option<handoff_config::Secret> {
        let at = self
            .models
            .providers
            .iter()
            .position(|p| p.name == provider.name);
        at.and_then(|i| self.keys.get(i))
            .and_then(ProviderKey::current)
    }
}

/// Answers one call on `wire`.
pub(crate) async fn forward(
    route: Arc<GatewayRoute>,
    wire: CallWire,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(token) = presented_token(&headers) else {
        return refusal(
            wire,
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "no task token: give the key this task was started with",
        );
    };
    let Some(peek) = Peek::read(&body) else {
        let message = "the request body must be a JSON object";
        return refusal(
            wire,
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            message,
        );
    };
    let task = match route
        .engine
        .gateway_admit(token, peek.expected_tokens())
        .await
    {
        Ok(task) => task,
        Err(refused) => return refused_call(&route.engine, wire, refused),
    };
    // Only a caller holding a live task token learns how the providers are set up.
    let (provider, rewritten) = match routed(&route.models, wire, peek.model()) {
        Ok(routed) => routed,
        Err(refused) => return refused,
    };
    let streaming = peek.streaming();
    let asked_model = rewritten.or(peek.model()).map(str::to_owned);
    let body = request::outgoing(body, wire, &peek, rewritten);
    let started = Instant::now();
    let sent = upstream_request(&route, provider, wire, &headers, body)
        .send()
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(task = %task.id, error = %e, "model gateway: the provider did not answer");
            let message = "the model provider could not be reached; try again";
            return refusal(wire, StatusCode::BAD_GATEWAY, "api_error", message);
        }
    };
    let status = answer.status();
    let mut response = Response::builder().status(status.as_u16());
    for name in PASSED_BACK {
        if let Some(value) = answer.headers().get(*name) {
            response = response.header(*name, value.clone());
        }
    }
    let engine = route.engine.clone();
    let provider = provider.name.clone();
    let done = Box::new(move |usage: CallUsage| {
        let asked = Asked {
            provider,
            model: asked_model,
        };
        let call = model_call(wire, usage, asked, status.as_u16(), started);
        tokio::spawn(async move { engine.gateway_spent(&task, call).await });
    });
    let scanner = UsageScanner::new(wire, streaming && status.is_success());
    let body = Tapped::new(answer.bytes_stream().boxed(), scanner, done);
    response
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// The provider a call asking for `model` goes to, and the model to ask it for when that
/// differs; a refusal in the caller's wire when none can take it.
#[allow(clippy::result_large_err)] // Built once per call and returned as it is.
fn routed<'a, 'm>(
    models: &'a ModelsConfig,
    wire: CallWire,
    model: Option<&'m str>,
) -> Result<(&'a ModelProvider, Option<&'m str>), Response> {
    models.route(provider_wire(wire), model).map_err(|e| {
        let (status, kind) = match e {
            RouteError::NoProvider(_) => (StatusCode::NOT_IMPLEMENTED, "not_supported"),
            RouteError::WrongWire { .. } => (StatusCode::BAD_REQUEST, "invalid_request_error"),
        };
        refusal(wire, status, kind, &e.to_string())
    })
}

/// The request to `provider`: `body` (as [`request::outgoing`] made it), its key, and the
/// caller's wire headers that matter.
fn upstream_request(
    route: &GatewayRoute,
    provider: &ModelProvider,
    wire: CallWire,
    headers: &HeaderMap,
    body: Bytes,
) -> reqwest::RequestBuilder {
    let path = match wire {
        CallWire::OpenAiChat => "/chat/completions",
        CallWire::OpenAiResponses => "/responses",
        CallWire::Anthropic => "/v1/messages",
    };
    let mut builder = route
        .client
        .post(format!("{}{path}", provider.url))
        .header(header::CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(accept) = headers.get(header::ACCEPT) {
        builder = builder.header(header::ACCEPT, accept.clone());
    }
    match (wire, route.key(provider)) {
        (CallWire::Anthropic, key) => {
            let version = headers
                .get("anthropic-version")
                .cloned()
                .unwrap_or(HeaderValue::from_static("2023-06-01"));
            builder = builder.header("anthropic-version", version);
            if let Some(beta) = headers.get("anthropic-beta") {
                builder = builder.header("anthropic-beta", beta.clone());
            }
            if let Some(key) = key {
                builder = builder.header("x-api-key", key.expose());
            }
        }
        (_, Some(key)) => builder = builder.bearer_auth(key.expose()),
        (_, None) => {}
    }
    builder
}

/// The wire a provider must speak to answer a call on `wire`.
fn provider_wire(wire: CallWire) -> ModelWire {
    match wire {
        CallWire::Anthropic => ModelWire::Anthropic,
        CallWire::OpenAiChat | CallWire::OpenAiResponses => ModelWire::OpenAi,
    }
}

/// The token a call carries: `Authorization: Bearer …` or `x-api-key`.
fn presented_token(headers: &HeaderMap) -> Option<&str> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    bearer
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The gateway's refusal of a call, in the caller's wire. A spent budget stops the run once
/// the refusal has been handed to the connection, so the agent reads why first.
fn refused_call(engine: &Engine, wire: CallWire, refused: GatewayRefusal) -> Response {
    let (status, kind) = refusal_kind(&refused);
    let mut response = refusal(wire, status, kind, &refused.to_string());
    if let GatewayRefusal::RateLimited { retry_after, .. } = &refused {
        // Whole seconds, rounded up: a client that waits that long is admitted.
        let seconds = retry_after.as_millis().div_ceil(1000).max(1);
        if let Ok(value) = header::HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    let GatewayRefusal::Budget { task, why } = refused else {
        return response;
    };
    let (parts, body) = response.into_parts();
    let engine = engine.clone();
    let done: super::tap::Done = Box::new(move |_| {
        tokio::spawn(async move { engine.gateway_exhaust(&task, &why).await });
    });
    let scanner = UsageScanner::new(wire, false);
    let body = Tapped::new(body.into_data_stream(), scanner, done);
    Response::from_parts(parts, Body::from_stream(body))
}

/// The status and error type of a refusal.
fn refusal_kind(refused: &GatewayRefusal) -> (StatusCode, &'static str) {
    match refused {
        GatewayRefusal::Unauthorized | GatewayRefusal::RunEnded => {
            (StatusCode::UNAUTHORIZED, "authentication_error")
        }
        // Not 429: clients retry that, and a spent budget stays spent.
        GatewayRefusal::Budget { .. } => (StatusCode::PAYMENT_REQUIRED, "budget_exhausted"),
        // 429 with retry-after: the agent's own client waits and tries again, as it does for
        // the provider's own limit.
        GatewayRefusal::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error"),
        GatewayRefusal::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "overloaded_error"),
    }
}

/// What a call asked for: the provider it went to and the model it named there.
struct Asked {
    provider: String,
    model: Option<String>,
}

/// The engine's record of one call.
fn model_call(
    wire: CallWire,
    usage: CallUsage,
    asked: Asked,
    status: u16,
    started: Instant,
) -> ModelCall {
    ModelCall {
        provider: asked.provider,
        wire: match wire {
            CallWire::OpenAiChat => "openai_chat",
            CallWire::OpenAiResponses => "openai_responses",
            CallWire::Anthropic => "anthropic",
        },
        model: usage.model.or(asked.model),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_tokens: usage.cached_tokens,
        reported: usage.reported,
        status,
        latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_either_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(presented_token(&headers), None);
        headers.insert("x-api-key", HeaderValue::from_static("hmt1_x"));
        assert_eq!(presented_token(&headers), Some("hmt1_x"));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer hmt1_y"),
        );
        assert_eq!(presented_token(&headers), Some("hmt1_y"));
    }
}
