//! The provider wire formats. Each module reads a request into a [`Conversation`] and renders
//! a [`Reply`] or an error exactly as that provider would.

pub(crate) mod anthropic;
pub(crate) mod gemini;
pub(crate) mod openai_chat;
pub(crate) mod responses;

use serde_json::Value;

use crate::log::Api;
use crate::reply::Reply;
use crate::script::ErrorReply;
use crate::select::Conversation;
use crate::sse::Frames;

/// Per-response facts shared by every wire format.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// Model name echoed back.
    pub model: String,
    /// Unix seconds.
    pub created: u64,
    /// Base for response/message ids, unique within the conversation.
    pub id: String,
}

/// One provider API.
pub(crate) trait Wire {
    /// Which API this is, for the log.
    const API: Api;

    /// What the selection needs from the request body.
    fn inspect(body: &Value) -> Conversation;

    /// Whether the request asks for a streamed reply.
    fn wants_stream(body: &Value) -> bool {
        body.get("stream").and_then(Value::as_bool).unwrap_or(false)
    }

    /// The complete (non-streaming) response body.
    fn json(reply: &Reply, ctx: &Context) -> Value;

    /// The streamed response.
    fn stream(reply: &Reply, ctx: &Context) -> Frames;

    /// The error body this provider sends with an HTTP error status.
    fn error(error: &ErrorReply) -> Value;
}

/// Whether `body[key]` is a non-empty array (how every API declares tools).
pub(crate) fn has_items(body: &Value, key: &str) -> bool {
    body.get(key)
        .and_then(Value::as_array)
        .is_some_and(|items| !items.is_empty())
}

/// The `text` of every part whose `type` is one of `kinds`, joined by newlines; a plain string
/// content is its own text. `None` when there is no such text.
pub(crate) fn text_of(content: &Value, kinds: &[&str]) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    p.get("type")
                        .and_then(Value::as_str)
                        .is_some_and(|t| kinds.contains(&t))
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The OpenAI error body, shared by Chat Completions and the Responses API.
pub(crate) fn openai_error(error: &ErrorReply) -> Value {
    serde_json::json!({
        "error": {
            "message": error.message,
            "type": error.kind,
            "param": null,
            "code": null,
        }
    })
}
