//! Anthropic Messages (`POST /v1/messages`), as Claude Code calls it.

use serde_json::{Value, json};

use super::{Context, Wire, has_items, text_of};
use crate::log::Api;
use crate::reply::{Reply, chunks};
use crate::script::ErrorReply;
use crate::select::{Conversation, Entry, count_turns_after};
use crate::sse::{self, Frames};

/// The Anthropic Messages wire format.
pub(crate) struct Anthropic;

impl Wire for Anthropic {
    const API: Api = Api::Anthropic;

    fn inspect(body: &Value) -> Conversation {
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let (last_user, turn) = count_turns_after(messages, classify);
        Conversation {
            user_message: last_user
                .and_then(|i| messages[i].get("content"))
                .and_then(|c| text_of(c, &["text"])),
            turn,
            tooled: has_items(body, "tools"),
            history_len: messages.len(),
            custom_tools: Vec::new(),
        }
    }

    fn json(reply: &Reply, ctx: &Context) -> Value {
        let mut content: Vec<Value> = reply
            .text
            .iter()
            .map(|text| json!({"type": "text", "text": text}))
            .collect();
        content.extend(reply.tool_calls.iter().map(|call| {
            json!({
                "type": "tool_use",
                "id": format!("toolu_{}", call.key),
                "name": call.name,
                "input": call.arguments_object(),
            })
        }));
        if content.is_empty() {
            content.push(json!({"type": "text", "text": ""}));
        }
        json!({
            "id": message_id(ctx),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": stop_reason(reply),
            "stop_sequence": null,
            "usage": usage(reply, reply.output_tokens),
        })
    }

    fn stream(reply: &Reply, ctx: &Context) -> Frames {
        let start = json!({
            "type": "message_start",
            "message": {
                "id": message_id(ctx),
                "type": "message",
                "role": "assistant",
                "model": ctx.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": usage(reply, 1),
            },
        });
        let mut open = vec![
            sse::event("message_start", &start),
            sse::event("ping", &json!({"type": "ping"})),
        ];
        let mut index = 0;
        let empty = reply.text.is_none() && !reply.has_tool_calls();
        if let Some(text) = reply.text.as_deref().or(empty.then_some("")) {
            open.push(block_start(index, json!({"type": "text", "text": ""})));
            for piece in chunks(text, 3) {
                open.push(block_delta(
                    index,
                    json!({"type": "text_delta", "text": piece}),
                ));
            }
            open.push(block_stop(index));
            index += 1;
        }
        for call in &reply.tool_calls {
            open.push(block_start(
                index,
                json!({"type": "tool_use", "id": format!("toolu_{}", call.key), "name": call.name, "input": {}}),
            ));
            for piece in chunks(&call.arguments_object().to_string(), 2) {
                open.push(block_delta(
                    index,
                    json!({"type": "input_json_delta", "partial_json": piece}),
                ));
            }
            open.push(block_stop(index));
            index += 1;
        }
        let delta = json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
            "usage": usage(reply, reply.output_tokens),
        });
        Frames {
            open,
            close: vec![
                sse::event("message_delta", &delta),
                sse::event("message_stop", &json!({"type": "message_stop"})),
            ],
        }
    }

    fn error(error: &ErrorReply) -> Value {
        json!({
            "type": "error",
            "error": {"type": error.kind, "message": error.message},
        })
    }
}

/// How Claude Code surfaces a message the user sent while it was working: a `system` message
/// inside `messages` that starts with this.
const MID_TURN_USER_MESSAGE: &str = "The user sent a new message while you were working";

/// A user message is real user input unless it carries tool results: Claude Code appends
/// `<system-reminder>` text blocks next to `tool_result` blocks, and those must not reset
/// the turn count. A user message Claude Code relays mid-turn (as a `system` message) is real
/// user input too.
fn classify(message: &Value) -> Entry {
    match message.get("role").and_then(Value::as_str) {
        Some("user") => {
            let content = message.get("content").unwrap_or(&Value::Null);
            let has_tool_result = content.as_array().is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            });
            if !has_tool_result && text_of(content, &["text"]).is_some() {
                Entry::User
            } else {
                Entry::ToolResult
            }
        }
        Some("assistant") => Entry::Model,
        Some("system")
            if text_of(message.get("content").unwrap_or(&Value::Null), &["text"])
                .is_some_and(|t| t.trim_start().starts_with(MID_TURN_USER_MESSAGE)) =>
        {
            Entry::User
        }
        _ => Entry::Neutral,
    }
}

fn message_id(ctx: &Context) -> String {
    format!("msg_{}", ctx.id)
}

fn stop_reason(reply: &Reply) -> &'static str {
    if reply.truncated {
        "max_tokens"
    } else if reply.has_tool_calls() {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn usage(reply: &Reply, output_tokens: u64) -> Value {
    json!({
        "input_tokens": reply.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    })
}

fn block_start(index: usize, block: Value) -> bytes::Bytes {
    sse::event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn block_delta(index: usize, delta: Value) -> bytes::Bytes {
    sse::event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: usize) -> bytes::Bytes {
    sse::event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn tool_results_with_reminders_are_not_user_messages() {
        let body = json!({
            "tools": [{"name": "Write"}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>context</system-reminder>"},
                    {"type": "text", "text": "CREATE-FILE please"}
                ]},
                {"role": "system", "content": [{"type": "text", "text": "Primary working directory: /w"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "On it."},
                    {"type": "tool_use", "id": "toolu_2_0", "name": "Write", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_2_0", "content": "ok"},
                    {"type": "text", "text": "<system-reminder>files changed</system-reminder>"}
                ]}
            ]
        });
        assert_eq!(
            Anthropic::inspect(&body),
            Conversation {
                user_message: Some(
                    "<system-reminder>context</system-reminder>\nCREATE-FILE please".into()
                ),
                turn: 1,
                tooled: true,
                history_len: 4,
                custom_tools: vec![],
            }
        );
    }

    #[test]
    fn a_message_relayed_mid_turn_is_the_last_user_message() {
        let body = json!({
            "tools": [{"name": "Bash"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "WAIT please"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
                {"role": "system", "content": [{"type": "text", "text":
                    "The user sent a new message while you were working:\nNAME-IS-NOTES\n\nThis is how…"}]}
            ]
        });
        let conversation = Anthropic::inspect(&body);
        assert!(
            conversation
                .user_message
                .as_deref()
                .is_some_and(|m| m.contains("NAME-IS-NOTES")),
            "{conversation:?}"
        );
        assert_eq!(conversation.turn, 0);
    }

    #[test]
    fn string_content_is_a_user_message() {
        let body = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "reply"},
            {"role": "user", "content": "second"}
        ]});
        let conversation = Anthropic::inspect(&body);
        assert_eq!(conversation.user_message.as_deref(), Some("second"));
        assert_eq!(conversation.turn, 0);
        assert!(!conversation.tooled);
    }
}
