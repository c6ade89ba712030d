//! The HTTP routes and the request flow shared by every API: parse, select, log, then delay,
//! fail, hang or answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::cwd::find_cwd;
use crate::embeddings;
use crate::log::{Api, LoggedRequest, RequestLog};
use crate::reply::Reply;
use crate::script::{ErrorReply, Script};
use crate::select::select;
use crate::shutdown::Shutdown;
use crate::sse;
use crate::wire::anthropic::Anthropic;
use crate::wire::gemini::Gemini;
use crate::wire::openai_chat::OpenAiChat;
use crate::wire::responses::Responses;
use crate::wire::{Context, Wire};

/// Agents resend the whole conversation each turn; axum's 2 MB default is too small for a
/// long session.
const BODY_LIMIT: usize = 256 * 1024 * 1024;

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    /// The script.
    pub script: Arc<Script>,
    /// The request log.
    pub log: Arc<RequestLog>,
    /// Ends hanging replies and delays.
    pub shutdown: Shutdown,
    /// Numbers responses, for unique response/message ids.
    pub responses: Arc<AtomicU64>,
}

/// The router serving every API.
pub(crate) fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(completion::<OpenAiChat>))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/responses", post(completion::<Responses>))
        .route("/v1/messages", post(completion::<Anthropic>))
        .route("/v1/messages/count_tokens", post(count_tokens))
        // Gemini puts the method after a colon inside the last segment (`model:method`),
        // which a route pattern cannot split.
        .route("/v1beta/models/{*rest}", post(gemini))
        .fallback(not_found)
        .method_not_allowed_fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn models(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
) -> Response {
    state
        .log
        .record(plain_entry(&method, &uri, Api::Models, Value::Null));
    // A provider lists its models only to a caller with its key, as it answers only them.
    if wrong_key(&state, &headers) {
        return error_response::<OpenAiChat>(&ErrorReply {
            status: 401,
            kind: "authentication_error".into(),
            message: "incorrect API key provided".into(),
        });
    }
    // Both OpenAI's and Anthropic's field names, so either kind of client can read it.
    let data: Vec<Value> = state
        .script
        .models
        .iter()
        .map(|id| {
            json!({
                "id": id,
                "object": "model",
                "type": "model",
                "created": 0,
                "created_at": "1970-01-01T00:00:00Z",
                "display_name": id,
                "owned_by": "handoff-scripted-model",
            })
        })
        .collect();
    Json(json!({
        "object": "list",
        "data": data,
        "has_more": false,
        "first_id": state.script.models.first(),
        "last_id": state.script.models.last(),
    }))
    .into_response()
}

async fn completion<W: Wire>(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    if wrong_key(&state, &headers) {
        state
            .log
            .record(plain_entry(&method, &uri, W::API, Value::Null));
        return error_response::<W>(&ErrorReply {
            status: 401,
            kind: "authentication_error".into(),
            message: "incorrect API key provided".into(),
        });
    }
    respond::<W>(state, &method, &uri, &body, None, None).await
}

/// Whether the script wants a key and `headers` do not carry it.
fn wrong_key(state: &AppState, headers: &axum::http::HeaderMap) -> bool {
    state
        .script
        .api_key
        .as_ref()
        .is_some_and(|wanted| presented_key(headers) != Some(wanted.as_str()))
}

/// The key a request carries: `Authorization: Bearer …` (OpenAI) or `x-api-key` (Anthropic).
fn presented_key(headers: &axum::http::HeaderMap) -> Option<&str> {
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    bearer.or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
}

async fn gemini(
    State(state): State<AppState>,
    Path(rest): Path<String>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let Some((model, action)) = rest.rsplit_once(':') else {
        return not_found(State(state), method, uri, body).await;
    };
    let model = Some(model.to_string());
    match action {
        "generateContent" => {
            respond::<Gemini>(state, &method, &uri, &body, Some(false), model).await
        }
        "streamGenerateContent" => {
            respond::<Gemini>(state, &method, &uri, &body, Some(true), model).await
        }
        "countTokens" => {
            let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
            state
                .log
                .record(plain_entry(&method, &uri, Api::CountTokens, json));
            Json(json!({"totalTokens": estimate(&body)})).into_response()
        }
        _ => not_found(State(state), method, uri, body).await,
    }
}

/// OpenAI embeddings: deterministic vectors, not scripted (see [`embeddings`]).
async fn embeddings(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = embeddings::respond(&json);
    state
        .log
        .record(plain_entry(&method, &uri, Api::Embeddings, json));
    match reply {
        Ok(body) => Json(body).into_response(),
        Err(error) => error_response::<OpenAiChat>(&error.reply()),
    }
}

async fn count_tokens(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let conversation = Anthropic::inspect(&json);
    let mut entry = plain_entry(&method, &uri, Api::CountTokens, Value::Null);
    entry.cwd = find_cwd(&json);
    entry.user_message = conversation.user_message;
    entry.turn = conversation.turn;
    entry.tooled = conversation.tooled;
    entry.body = json;
    state.log.record(entry);
    Json(json!({"input_tokens": estimate(&body)})).into_response()
}

async fn not_found(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state
        .log
        .record(plain_entry(&method, &uri, Api::Unknown, json));
    let message = format!("scripted model has no route for {method} {}", uri.path());
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": {"message": message, "type": "not_found_error", "code": null}})),
    )
        .into_response()
}

/// The flow shared by every completion API. The request is logged before any delay or hang,
/// so a test can observe that a hanging request has arrived.
async fn respond<W: Wire>(
    state: AppState,
    method: &Method,
    uri: &Uri,
    body: &Bytes,
    stream: Option<bool>,
    model: Option<String>,
) -> Response {
    let json: Value = match serde_json::from_slice(body) {
        Ok(json @ Value::Object(_)) => json,
        Ok(_) | Err(_) => {
            state
                .log
                .record(plain_entry(method, uri, W::API, Value::Null));
            return error_response::<W>(&ErrorReply {
                status: 400,
                kind: "invalid_request_error".into(),
                message: "request body must be a JSON object".into(),
            });
        }
    };
    let conversation = W::inspect(&json);
    let cwd = find_cwd(&json);
    let selection = select(&state.script, &conversation, W::API);
    let turn = crate::capture::resolve_turn(selection.turn, &json);
    let stream = stream.unwrap_or_else(|| W::wants_stream(&json));
    let model = model
        .or_else(|| {
            json.get("model")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| state.script.default_model().to_string());
    state.log.record(LoggedRequest {
        scenario: selection.scenario.map(str::to_string),
        turn: conversation.turn,
        tooled: conversation.tooled,
        stream,
        cwd: cwd.clone(),
        user_message: conversation.user_message.clone(),
        ..plain_entry(method, uri, W::API, json)
    });

    if let Some(ms) = turn.delay_ms {
        let slept = tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => true,
            () = state.shutdown.clone().wait() => false,
        };
        if !slept {
            return shutting_down::<W>();
        }
    }
    if let Some(path) = &turn.until_file
        && !held_until(std::path::Path::new(path), &state.shutdown).await
    {
        return shutting_down::<W>();
    }
    if let Some(error) = &turn.error {
        return error_response::<W>(error);
    }
    let reply = Reply::resolve(&turn, &conversation, cwd.as_deref(), body.len());
    let ctx = Context {
        model,
        created: now().as_secs(),
        id: format!("{:08}", state.responses.fetch_add(1, Ordering::Relaxed)),
    };
    if stream {
        sse::response(W::stream(&reply, &ctx), turn.hang, state.shutdown.clone())
    } else if turn.hang {
        state.shutdown.clone().wait().await;
        shutting_down::<W>()
    } else {
        Json(W::json(&reply, &ctx)).into_response()
    }
}

/// The longest a reply is held for its file.
const HOLD_CAP: Duration = Duration::from_secs(600);

/// Waits until `path` exists (at most [`HOLD_CAP`]); false if the server shuts down first.
async fn held_until(path: &std::path::Path, shutdown: &Shutdown) -> bool {
    let give_up = tokio::time::Instant::now() + HOLD_CAP;
    while !path.exists() && tokio::time::Instant::now() < give_up {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
            () = shutdown.clone().wait() => return false,
        }
    }
    true
}

fn error_response<W: Wire>(error: &ErrorReply) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(W::error(error))).into_response()
}

fn shutting_down<W: Wire>() -> Response {
    error_response::<W>(&ErrorReply {
        status: 503,
        kind: "overloaded_error".into(),
        message: "scripted model is shutting down".into(),
    })
}

fn plain_entry(method: &Method, uri: &Uri, api: Api, body: Value) -> LoggedRequest {
    LoggedRequest {
        ts_ms: u64::try_from(now().as_millis()).unwrap_or(u64::MAX),
        method: method.to_string(),
        path: uri.path().to_string(),
        api,
        scenario: None,
        turn: 0,
        tooled: false,
        stream: false,
        cwd: None,
        user_message: None,
        body,
    }
}

fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// About four bytes per token, like the usage figures in replies.
fn estimate(body: &Bytes) -> u64 {
    u64::try_from(body.len().div_ceil(4))
        .unwrap_or(u64::MAX)
        .max(1)
}
