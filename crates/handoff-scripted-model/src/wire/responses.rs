//! The OpenAI Responses API (`POST /v1/responses`), which Codex uses (`wire_api = "responses"`).
//! Codex only accepts a turn once `response.completed` arrives; items come from
//! `response.output_item.done`.

use serde_json::{Map, Value, json};

use super::{Context, Wire, has_items, openai_error, text_of};
use crate::log::Api;
use crate::reply::{Call, Reply, chunks};
use crate::script::ErrorReply;
use crate::select::{Conversation, Entry, count_turns_after};
use crate::sse::{self, Frames};

/// The Responses API wire format.
pub(crate) struct Responses;

impl Wire for Responses {
    const API: Api = Api::Responses;

    fn inspect(body: &Value) -> Conversation {
        let tooled = has_items(body, "tools");
        let custom_tools = body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|t| t.get("type").and_then(Value::as_str) == Some("custom"))
            .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
            .collect();
        let (user_message, turn, history_len) = match body.get("input") {
            Some(Value::String(text)) => (Some(text.clone()), 0, 1),
            Some(Value::Array(items)) => {
                let (last_user, turn) = count_turns_after(items, classify);
                let text = last_user.and_then(|i| user_text(&items[i]));
                (text, turn, items.len())
            }
            _ => (None, 0, 0),
        };
        Conversation {
            user_message,
            turn,
            tooled,
            history_len,
            custom_tools,
        }
    }

    fn json(reply: &Reply, ctx: &Context) -> Value {
        response_object(
            ctx,
            final_status(reply),
            output_items(reply, ctx),
            Some(reply),
        )
    }

    fn stream(reply: &Reply, ctx: &Context) -> Frames {
        let mut seq = Sequencer::default();
        let mut open = vec![
            seq.frame(
                "response.created",
                json!({"response": response_object(ctx, "in_progress", vec![], None)}),
            ),
            seq.frame(
                "response.in_progress",
                json!({"response": response_object(ctx, "in_progress", vec![], None)}),
            ),
        ];
        let items = output_items(reply, ctx);
        let mut output_index = 0;
        if let Some(text) = &reply.text {
            open.extend(message_frames(&mut seq, ctx, output_index, text));
            output_index += 1;
        }
        for call in &reply.tool_calls {
            open.extend(call_frames(&mut seq, output_index, call));
            output_index += 1;
        }
        let status = final_status(reply);
        let completed = json!({"response": response_object(ctx, status, items, Some(reply))});
        Frames {
            open,
            close: vec![seq.frame(&format!("response.{status}"), completed)],
        }
    }

    fn error(error: &ErrorReply) -> Value {
        openai_error(error)
    }
}

fn classify(item: &Value) -> Entry {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    match kind {
        "message" => match item.get("role").and_then(Value::as_str) {
            Some("user") if user_text(item).is_some() => Entry::User,
            // Images a tool injected as a user message are tool output, not user input.
            Some("user") => Entry::ToolResult,
            Some("assistant") => Entry::Model,
            _ => Entry::Neutral,
        },
        "reasoning" => Entry::Model,
        k if k.ends_with("_call") => Entry::Model,
        k if k.ends_with("_output") => Entry::ToolResult,
        _ => Entry::Neutral,
    }
}

fn user_text(item: &Value) -> Option<String> {
    item.get("content")
        .and_then(|c| text_of(c, &["input_text", "text"]))
}

/// Numbers frames in order, as the API's `sequence_number` does.
#[derive(Default)]
struct Sequencer(u64);

impl Sequencer {
    fn frame(&mut self, kind: &str, payload: Value) -> bytes::Bytes {
        let mut object = match payload {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        object.insert("type".into(), json!(kind));
        object.insert("sequence_number".into(), json!(self.0));
        self.0 += 1;
        sse::event(kind, &Value::Object(object))
    }
}

fn message_id(ctx: &Context) -> String {
    format!("msg_{}", ctx.id)
}

fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

fn message_item(ctx: &Context, status: &str, content: Vec<Value>) -> Value {
    json!({
        "id": message_id(ctx),
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    })
}

fn call_item(call: &Call, status: &str, complete: bool) -> Value {
    let arguments = match (complete, call.custom) {
        (false, _) => String::new(),
        (true, true) => call.freeform_input(),
        (true, false) => call.arguments_string(),
    };
    if call.custom {
        json!({
            "id": format!("ctc_{}", call.key),
            "type": "custom_tool_call",
            "status": status,
            "call_id": format!("call_{}", call.key),
            "name": call.name,
            "input": arguments,
        })
    } else {
        json!({
            "id": format!("fc_{}", call.key),
            "type": "function_call",
            "status": status,
            "call_id": format!("call_{}", call.key),
            "name": call.name,
            "arguments": arguments,
        })
    }
}

fn output_items(reply: &Reply, ctx: &Context) -> Vec<Value> {
    let message = reply
        .text
        .as_deref()
        .map(|text| message_item(ctx, "completed", vec![text_part(text)]));
    message
        .into_iter()
        .chain(
            reply
                .tool_calls
                .iter()
                .map(|c| call_item(c, "completed", true)),
        )
        .collect()
}

fn message_frames(
    seq: &mut Sequencer,
    ctx: &Context,
    output_index: usize,
    text: &str,
) -> Vec<bytes::Bytes> {
    let item_id = message_id(ctx);
    let mut frames = vec![
        seq.frame(
            "response.output_item.added",
            json!({"output_index": output_index, "item": message_item(ctx, "in_progress", vec![])}),
        ),
        seq.frame(
            "response.content_part.added",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": text_part("")}),
        ),
    ];
    for piece in chunks(text, 3) {
        frames.push(seq.frame(
            "response.output_text.delta",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "delta": piece, "logprobs": []}),
        ));
    }
    frames.extend([
        seq.frame(
            "response.output_text.done",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "text": text, "logprobs": []}),
        ),
        seq.frame(
            "response.content_part.done",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": text_part(text)}),
        ),
        seq.frame(
            "response.output_item.done",
            json!({"output_index": output_index, "item": message_item(ctx, "completed", vec![text_part(text)])}),
        ),
    ]);
    frames
}

fn call_frames(seq: &mut Sequencer, output_index: usize, call: &Call) -> Vec<bytes::Bytes> {
    let added = call_item(call, "in_progress", false);
    let item_id = added.get("id").cloned().unwrap_or(Value::Null);
    let (delta_kind, done_kind, done_field) = if call.custom {
        (
            "response.custom_tool_call_input.delta",
            "response.custom_tool_call_input.done",
            "input",
        )
    } else {
        (
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "arguments",
        )
    };
    let arguments = if call.custom {
        call.freeform_input()
    } else {
        call.arguments_string()
    };
    let mut frames = vec![seq.frame(
        "response.output_item.added",
        json!({"output_index": output_index, "item": added}),
    )];
    for piece in chunks(&arguments, 2) {
        frames.push(seq.frame(
            delta_kind,
            json!({"item_id": item_id, "output_index": output_index, "delta": piece}),
        ));
    }
    let mut done = json!({"item_id": item_id, "output_index": output_index, "name": call.name});
    done[done_field] = json!(arguments);
    frames.push(seq.frame(done_kind, done));
    frames.push(seq.frame(
        "response.output_item.done",
        json!({"output_index": output_index, "item": call_item(call, "completed", true)}),
    ));
    frames
}

/// `incomplete` when the turn was cut off at the output limit.
fn final_status(reply: &Reply) -> &'static str {
    if reply.truncated {
        "incomplete"
    } else {
        "completed"
    }
}

fn response_object(
    ctx: &Context,
    status: &str,
    output: Vec<Value>,
    usage: Option<&Reply>,
) -> Value {
    json!({
        "id": format!("resp_{}", ctx.id),
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "error": null,
        "incomplete_details": (status == "incomplete")
            .then(|| json!({"reason": "max_output_tokens"})),
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": true,
        "usage": usage.map(|r| json!({
            "input_tokens": r.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": r.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": r.input_tokens + r.output_tokens,
        })),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn user(text: &str) -> Value {
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    #[test]
    fn groups_parallel_calls_and_messages_into_turns() {
        let body = json!({
            "tools": [{"type": "function", "name": "exec_command"}, {"type": "custom", "name": "apply_patch"}],
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
                user("<environment_context><cwd>/w</cwd></environment_context>"),
                user("CREATE-FILE please"),
                {"type": "reasoning", "summary": []},
                {"type": "function_call", "call_id": "call_3_0", "name": "exec_command", "arguments": "{}"},
                {"type": "function_call", "call_id": "call_3_1", "name": "exec_command", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_3_0", "output": "ok"},
                {"type": "function_call_output", "call_id": "call_3_1", "output": "ok"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "doing it"}]},
                {"type": "custom_tool_call", "call_id": "call_8_0", "name": "apply_patch", "input": "x"},
                {"type": "custom_tool_call_output", "call_id": "call_8_0", "output": "ok"}
            ]
        });
        assert_eq!(
            Responses::inspect(&body),
            Conversation {
                user_message: Some("CREATE-FILE please".into()),
                turn: 2,
                tooled: true,
                history_len: 11,
                custom_tools: vec!["apply_patch".into()],
            }
        );
    }

    #[test]
    fn string_input_is_the_user_message() {
        let conversation = Responses::inspect(&json!({"input": "hello", "tools": []}));
        assert_eq!(conversation.user_message.as_deref(), Some("hello"));
        assert_eq!(conversation.turn, 0);
        assert!(!conversation.tooled);
    }
}
