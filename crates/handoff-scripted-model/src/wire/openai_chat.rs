//! OpenAI Chat Completions (`POST /v1/chat/completions`), as OpenCode's
//! `@ai-sdk/openai-compatible` provider calls it.

use serde_json::{Value, json};

use super::{Context, Wire, has_items, openai_error, text_of};
use crate::log::Api;
use crate::reply::{Reply, chunks};
use crate::script::ErrorReply;
use crate::select::{Conversation, Entry, count_turns_after};
use crate::sse::{self, Frames};

/// The Chat Completions wire format.
pub(crate) struct OpenAiChat;

impl Wire for OpenAiChat {
    const API: Api = Api::Chat;

    fn inspect(body: &Value) -> Conversation {
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let (last_user, turn) = count_turns_after(messages, classify);
        Conversation {
            user_message: last_user
                .and_then(|i| messages[i].get("content"))
                .map(|c| text_of(c, &["text"]).unwrap_or_default()),
            turn,
            tooled: has_items(body, "tools") || has_items(body, "functions"),
            history_len: messages.len(),
            custom_tools: Vec::new(),
        }
    }

    fn json(reply: &Reply, ctx: &Context) -> Value {
        let mut message = json!({"role": "assistant", "content": reply.text});
        if reply.has_tool_calls() {
            message["tool_calls"] = reply
                .tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": format!("call_{}", call.key),
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments_string()},
                    })
                })
                .collect();
        }
        json!({
            "id": completion_id(ctx),
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": finish_reason(reply),
            }],
            "usage": usage(reply),
        })
    }

    fn stream(reply: &Reply, ctx: &Context) -> Frames {
        let chunk = |delta: Value, finish: Option<&str>| {
            sse::data(
                &json!({
                    "id": completion_id(ctx),
                    "object": "chat.completion.chunk",
                    "created": ctx.created,
                    "model": ctx.model,
                    "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
                })
                .to_string(),
            )
        };
        let mut open = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
        if let Some(text) = &reply.text {
            for piece in chunks(text, 3) {
                open.push(chunk(json!({"content": piece}), None));
            }
        }
        for (index, call) in reply.tool_calls.iter().enumerate() {
            open.push(chunk(
                json!({"tool_calls": [{
                    "index": index,
                    "id": format!("call_{}", call.key),
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }]}),
                None,
            ));
            for piece in chunks(&call.arguments_string(), 2) {
                open.push(chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    None,
                ));
            }
        }
        let usage_chunk = json!({
            "id": completion_id(ctx),
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [],
            "usage": usage(reply),
        });
        Frames {
            open,
            close: vec![
                chunk(json!({}), Some(finish_reason(reply))),
                sse::data(&usage_chunk.to_string()),
                sse::data("[DONE]"),
            ],
        }
    }

    fn error(error: &ErrorReply) -> Value {
        openai_error(error)
    }
}

fn classify(message: &Value) -> Entry {
    match message.get("role").and_then(Value::as_str) {
        Some("user") => Entry::User,
        Some("assistant") => Entry::Model,
        Some("tool" | "function") => Entry::ToolResult,
        _ => Entry::Neutral,
    }
}

fn completion_id(ctx: &Context) -> String {
    format!("chatcmpl-{}", ctx.id)
}

fn finish_reason(reply: &Reply) -> &'static str {
    if reply.truncated {
        "length"
    } else if reply.has_tool_calls() {
        "tool_calls"
    } else {
        "stop"
    }
}

fn usage(reply: &Reply) -> Value {
    json!({
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn counts_assistant_turns_after_the_last_user_message() {
        let body = json!({
            "tools": [{"type": "function", "function": {"name": "write"}}],
            "messages": [
                {"role": "system", "content": "Working directory: /w"},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "text", "text": "CREATE-FILE"}, {"type": "text", "text": "now"}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_4_0"}]},
                {"role": "tool", "tool_call_id": "call_4_0", "content": "Wrote file"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_6_0"}]},
                {"role": "tool", "tool_call_id": "call_6_0", "content": "Wrote file"}
            ]
        });
        let conversation = OpenAiChat::inspect(&body);
        assert_eq!(
            conversation,
            Conversation {
                user_message: Some("CREATE-FILE\nnow".into()),
                turn: 2,
                tooled: true,
                history_len: 8,
                custom_tools: vec![],
            }
        );
    }

    #[test]
    fn a_truncated_reply_finishes_with_length() {
        let mut reply = Reply {
            text: Some("half".into()),
            tool_calls: vec![],
            input_tokens: 1,
            output_tokens: 1,
            truncated: false,
        };
        assert_eq!(finish_reason(&reply), "stop");
        reply.truncated = true;
        assert_eq!(finish_reason(&reply), "length");
    }

    #[test]
    fn no_tools_means_untooled() {
        let body = json!({"tools": [], "messages": [{"role": "user", "content": "title?"}]});
        let conversation = OpenAiChat::inspect(&body);
        assert!(!conversation.tooled);
        assert_eq!(conversation.turn, 0);
    }
}
