//! Gemini (`POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent`).
//! Streaming is chosen by the path, not the body; each SSE frame is a whole
//! `GenerateContentResponse` and the last one carries `finishReason` and usage.

use serde_json::{Value, json};

use super::{Context, Wire, has_items};
use crate::log::Api;
use crate::reply::{Reply, chunks};
use crate::script::ErrorReply;
use crate::select::{Conversation, Entry, count_turns_after};
use crate::sse::{self, Frames};

/// The Gemini wire format.
pub(crate) struct Gemini;

impl Wire for Gemini {
    const API: Api = Api::Gemini;

    fn inspect(body: &Value) -> Conversation {
        let contents = body
            .get("contents")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let (last_user, turn) = count_turns_after(contents, classify);
        Conversation {
            user_message: last_user.and_then(|i| user_text(&contents[i])),
            turn,
            tooled: has_items(body, "tools"),
            history_len: contents.len(),
            custom_tools: Vec::new(),
        }
    }

    fn wants_stream(_body: &Value) -> bool {
        // The handler decides from the method in the path.
        false
    }

    fn json(reply: &Reply, ctx: &Context) -> Value {
        let mut parts: Vec<Value> = reply.text.iter().map(|t| json!({"text": t})).collect();
        parts.extend(call_parts(reply));
        if parts.is_empty() {
            parts.push(json!({"text": ""}));
        }
        chunk(ctx, parts, Some(reply))
    }

    fn stream(reply: &Reply, ctx: &Context) -> Frames {
        let mut bodies: Vec<Vec<Value>> = reply
            .text
            .iter()
            .flat_map(|t| chunks(t, 3))
            .map(|piece| vec![json!({"text": piece})])
            .collect();
        let calls = call_parts(reply);
        if !calls.is_empty() {
            bodies.push(calls);
        }
        let last = bodies.pop().unwrap_or_else(|| vec![json!({"text": ""})]);
        let frame = |value: Value| sse::data(&value.to_string());
        Frames {
            open: bodies
                .into_iter()
                .map(|parts| frame(chunk(ctx, parts, None)))
                .collect(),
            close: vec![frame(chunk(ctx, last, Some(reply)))],
        }
    }

    fn error(error: &ErrorReply) -> Value {
        json!({
            "error": {
                "code": error.status,
                "message": error.message,
                "status": grpc_status(error.status),
            }
        })
    }
}

fn classify(content: &Value) -> Entry {
    let parts = content
        .get("parts")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let has = |key: &str| parts.iter().any(|p| p.get(key).is_some());
    // A missing role means "user" in single-turn requests.
    match content
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("user")
    {
        "user" if !has("functionResponse") && has("text") => Entry::User,
        "user" | "function" => Entry::ToolResult,
        "model" => Entry::Model,
        _ => Entry::Neutral,
    }
}

fn user_text(content: &Value) -> Option<String> {
    let texts: Vec<&str> = content
        .get("parts")?
        .as_array()?
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

fn call_parts(reply: &Reply) -> Vec<Value> {
    reply
        .tool_calls
        .iter()
        .map(|call| json!({"functionCall": {"name": call.name, "args": call.arguments_object()}}))
        .collect()
}

/// One `GenerateContentResponse`; `finish` marks the final one.
fn chunk(ctx: &Context, parts: Vec<Value>, finish: Option<&Reply>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut response = json!({"modelVersion": ctx.model, "responseId": ctx.id});
    if let Some(reply) = finish {
        candidate["finishReason"] = json!(if reply.truncated {
            "MAX_TOKENS"
        } else {
            "STOP"
        });
        response["usageMetadata"] = json!({
            "promptTokenCount": reply.input_tokens,
            "candidatesTokenCount": reply.output_tokens,
            "totalTokenCount": reply.input_tokens + reply.output_tokens,
        });
    }
    response["candidates"] = json!([candidate]);
    response
}

fn grpc_status(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn function_responses_are_not_user_messages() {
        let body = json!({
            "tools": [{"functionDeclarations": [{"name": "write_file"}]}],
            "contents": [
                {"role": "user", "parts": [{"text": "CREATE-FILE"}, {"text": "please"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "write_file", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {}}}]},
                {"role": "model", "parts": [{"text": "done"}]}
            ]
        });
        assert_eq!(
            Gemini::inspect(&body),
            Conversation {
                user_message: Some("CREATE-FILE\nplease".into()),
                turn: 2,
                tooled: true,
                history_len: 4,
                custom_tools: vec![],
            }
        );
    }

    #[test]
    fn error_body_uses_grpc_status_names() {
        let error = ErrorReply {
            status: 429,
            kind: "rate_limit_error".into(),
            message: "slow down".into(),
        };
        assert_eq!(
            Gemini::error(&error),
            json!({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})
        );
    }
}
