//! The model gateway: the provider endpoints Handoff serves its tasks' agents (OpenAI Chat
//! Completions and Responses under `/gateway/openai/v1`, Anthropic Messages under
//! `/gateway/anthropic/v1`), on the server's own loopback listener. A run reaches it with
//! the URL and token it was started with (see `handoff-engine`'s `gateway`), never with the
//! provider's key: the gateway checks the token (this run's, still running), checks the task's
//! budget, forwards the call to the provider its model names (or the first of its wire) with
//! that provider's key, passes the answer through as it streams and counts what the provider
//! says it used. Nothing else of Handoff accepts a
//! task token, and the gateway accepts nothing else.
//!
//! Why the loopback listener: every isolation level that lets an agent reach its provider at
//! all (the network on) reaches 127.0.0.1, so no extra socket or bind mount is needed; with
//! the network off an agent reaches no provider, gateway or not.
//!
//! Durable: nothing here (the engine records each call on its task). In memory: the HTTP
//! client, the providers' settings and their keys (a key file's last read).

mod forward;
mod key;
mod provider_key;
mod request;
mod tap;
mod wire_error;

use std::{net::SocketAddr, sync::Arc};

use axum::{Router, extract::DefaultBodyLimit, middleware, routing::post};
use handoff_config::Config;
use handoff_engine::{Engine, GatewayAccess};
use handoff_llm::CallWire;

use crate::edge::{self, EdgePolicy};

/// Largest request body forwarded (conversations with images and long files).
const MAX_REQUEST_BYTES: usize = 32 << 20;

/// The gateway's routes when a provider is configured and the gateway is on; else none.
pub(crate) fn router(
    config: &Config,
    engine: &Engine,
    policy: Arc<EdgePolicy>,
) -> std::io::Result<Router> {
    let Some(route) = forward::GatewayRoute::new(config, engine.clone())? else {
        return Ok(Router::new());
    };
    let route = Arc::new(route);
    let at = |wire: CallWire| {
        let route = route.clone();
        post(move |headers, body| forward::forward(route, wire, headers, body))
    };
    let router = Router::new()
        .route(
            "/gateway/openai/v1/chat/completions",
            at(CallWire::OpenAiChat),
        )
        .route(
            "/gateway/openai/v1/responses",
            at(CallWire::OpenAiResponses),
        )
        .route("/gateway/anthropic/v1/messages", at(CallWire::Anthropic))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .layer(middleware::from_fn_with_state(policy, edge::host_guard));
    Ok(router)
}

/// Opens the gateway to the runs that start from now on, at `local` (the bound address); an
/// error when its key cannot be read or made. Nothing when no gateway serves.
pub(crate) fn open(config: &Config, engine: &Engine, local: SocketAddr) -> std::io::Result<()> {
    if !config.models.gateway_on() {
        return Ok(());
    }
    let key = key::load_or_create(&config.data_dir)?;
    let host = if local.ip().is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        local.ip().to_string()
    };
    engine.open_gateway(GatewayAccess {
        url: format!("http://{host}:{}/gateway", local.port()),
        key,
    });
    Ok(())
}
