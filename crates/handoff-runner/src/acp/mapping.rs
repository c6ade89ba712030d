//! What an ACP agent says (JSON-RPC notifications, requests and answers), read as what it
//! means for one task: `session/update` → task events, `session/request_permission` → an input
//! request, answers to Handoff's own requests → the handshake and the turns.

use std::collections::HashMap;

use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};

use crate::{
    InputKind, InputRequest,
    agent_process::jsonrpc::{Incoming, id_text, incoming},
    text::{EVENT_TEXT_MAX, clip},
};

/// What one message from the agent means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Signal {
    /// Progress to record.
    Event(NewEvent),
    /// A permission the agent waits on.
    Input(InputRequest),
    /// A request Handoff does not serve; it gets an error answer.
    Unsupported(Value),
    /// A request answered with an empty result and nothing done: its id.
    Acknowledged(Value),
    /// The answer to one of Handoff's requests: its id, then the result or the error message.
    Response(String, Result<Value, String>),
}

/// What the agent said so far that later messages add to: the message being streamed, the
/// tool calls by id, the last complete answer.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    message: String,
    /// The `messageId` of the message being streamed, when the agent gives one.
    message_id: Option<String>,
    tools: HashMap<String, ToolCall>,
    /// The last agent message of the last turn: the task's answer.
    pub answer: Option<String>,
    /// While a loaded session replays its history, updates are not news.
    pub replaying: bool,
}

/// What Handoff remembers of one tool call.
#[derive(Debug, Default, Clone)]
struct ToolCall {
    tool: String,
    kind: String,
    status: String,
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

impl Reader {
    /// Reads one JSON-RPC message.
    pub fn read(&mut self, message: &Value) -> Vec<Signal> {
        match incoming(message) {
            Incoming::Request {
                method: "session/request_permission",
                id,
                params,
            } => {
                let mut out = self.flush();
                out.push(Signal::Input(permission(id, params)));
                out
            }
            // OpenCode sends the content of every edit it was allowed to make to the client, to
            // update an editor's buffer, whatever the client declared (Handoff declares no
            // `fs`). Handoff has no buffers: nothing to update, and the agent writes the file
            // itself, inside its confinement. Written here it would be written unconfined, so
            // the request is acknowledged and nothing is written; refused, OpenCode prints a
            // stack trace per edit into the task's output.
            Incoming::Request {
                method: "fs/write_text_file",
                id,
                ..
            } => vec![Signal::Acknowledged(id.clone())],
            Incoming::Request { id, .. } => vec![Signal::Unsupported(id.clone())],
            Incoming::Notification {
                method: "session/update",
                params,
            } if !self.replaying => self.update(params.get("update").unwrap_or(&Value::Null)),
            Incoming::Notification { .. } | Incoming::Nothing => Vec::new(),
            Incoming::Response { id, result } => {
                let mut out = self.flush();
                out.push(Signal::Response(id, result.map_err(error_text)));
                out
            }
        }
    }

    /// Ends the agent message being streamed: a text event, and the answer so far.
    pub fn flush(&mut self) -> Vec<Signal> {
        if self.message.trim().is_empty() {
            self.message.clear();
            return Vec::new();
        }
        let message = std::mem::take(&mut self.message);
        self.answer = Some(message.clone());
        vec![Signal::Event(NewEvent::new(
            EventKind::Text,
            clip(&message, EVENT_TEXT_MAX),
        ))]
    }

    fn update(&mut self, update: &Value) -> Vec<Signal> {
        let kind = text(update, "sessionUpdate");
        if kind == "agent_message_chunk" {
            // A chunk of another message ends the one being streamed.
            let id = update.get("messageId").and_then(Value::as_str);
            let mut out = Vec::new();
            if id.is_some() && id != self.message_id.as_deref() {
                out = self.flush();
                self.message_id = id.map(str::to_owned);
            }
            if let Some(chunk) = update.pointer("/content/text").and_then(Value::as_str) {
                self.message.push_str(chunk);
            }
            return out;
        }
        let mut out = self.flush();
        match kind {
            "tool_call" | "tool_call_update" => out.extend(self.tool(update)),
            "plan" => out.push(plan(update.get("entries").unwrap_or(&Value::Null))),
            "usage_update" => out.push(Signal::Event(
                NewEvent::new(EventKind::Log, "context usage").with_data(
                    // The cost is the session's running total, not this step's: the engine
                    // counts what is new since the last report.
                    json!({ "used": update.get("used"), "size": update.get("size"),
                        "session_cost": update.get("cost").map(clip_json) }),
                ),
            )),
            "agent_thought_chunk"
            | "user_message_chunk"
            | "available_commands_update"
            | "current_mode_update"
            | "config_option_update"
            | "session_info_update" => {}
            // Kinds newer than this reader are kept as they came.
            other => out.push(Signal::Event(
                NewEvent::new(EventKind::Log, format!("ACP update `{}`", clip(other, 80)))
                    .with_data(clip_json(update)),
            )),
        }
        out
    }

    fn tool(&mut self, update: &Value) -> Vec<Signal> {
        let id = text(update, "toolCallId").to_owned();
        let call = self.tools.entry(id.clone()).or_default();
        if call.tool.is_empty() {
            call.tool = text(update, "title").to_owned();
        }
        if let Some(kind) = update.get("kind").and_then(Value::as_str) {
            call.kind = kind.to_owned();
        }
        let status = match update.get("status").and_then(Value::as_str) {
            Some("in_progress") => "running",
            Some("failed") => "error",
            Some(other) => other,
            None => call.status.as_str(),
        }
        .to_owned();
        if status == call.status {
            return Vec::new();
        }
        call.status = status.clone();
        let call = call.clone();
        vec![Signal::Event(tool_event(&id, &call, update))]
    }
}

fn tool_event(id: &str, call: &ToolCall, update: &Value) -> NewEvent {
    let title = update.get("title").and_then(Value::as_str);
    let message = match title {
        Some(title) if !title.is_empty() && title != call.tool => {
            format!("{} {}: {}", call.tool, call.status, clip(title, 200))
        }
        _ => format!("{} {}", call.tool, call.status),
    };
    let mut data = json!({ "tool": call.tool, "call_id": id, "status": call.status,
        "kind": call.kind });
    if let Some(title) = title {
        data["title"] = json!(clip(title, 500));
    }
    let locations: Vec<&str> = update
        .get("locations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("path").and_then(Value::as_str))
        .collect();
    if !locations.is_empty() {
        data["locations"] = json!(locations);
    }
    if let Some(input) = update
        .get("rawInput")
        .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
    {
        data["input"] = clip_json(input);
    }
    let content = update.get("content").and_then(Value::as_array);
    let diffs: Vec<Value> = content
        .into_iter()
        .flatten()
        .filter(|c| text(c, "type") == "diff")
        .map(|c| json!({ "path": c.get("path"), "new_text": clip(text(c, "newText"), 2000) }))
        .collect();
    if !diffs.is_empty() {
        data["diffs"] = json!(diffs);
    }
    let output: Vec<&str> = content
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/content/text").and_then(Value::as_str))
        .collect();
    if !output.is_empty() {
        data["output"] = json!(clip(&output.join("\n"), EVENT_TEXT_MAX));
    }
    NewEvent::new(EventKind::Tool, message).with_data(data)
}

/// A plan as the task's todo list (the shape the completion checks read).
fn plan(entries: &Value) -> Signal {
    let list = entries.as_array().cloned().unwrap_or_default();
    let done = list
        .iter()
        .filter(|e| text(e, "status") == "completed")
        .count();
    Signal::Event(
        NewEvent::new(
            EventKind::Log,
            format!("todo list: {done}/{} done", list.len()),
        )
        .with_data(json!({ "todos": list })),
    )
}

/// `session/request_permission` as Handoff's request: the permission named like Handoff's rules
/// name them (`bash`, `edit`, `read` …), the command or paths as patterns.
fn permission(id: &Value, params: &Value) -> InputRequest {
    let call = params.get("toolCall").unwrap_or(&Value::Null);
    let kind = text(call, "kind");
    let name = match kind {
        "execute" => "bash",
        "edit" | "delete" | "move" => "edit",
        "read" => "read",
        "search" => "grep",
        "fetch" => "webfetch",
        "" => "other",
        other => other,
    };
    let command = call.pointer("/rawInput/command").and_then(Value::as_str);
    let paths: Vec<String> = call
        .get("locations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("path").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let title = text(call, "title");
    let patterns = match (name, command) {
        ("bash", Some(command)) => vec![command.to_owned()],
        _ if !paths.is_empty() => paths,
        _ => vec![title.to_owned()],
    };
    InputRequest {
        id: id_text(id),
        kind: InputKind::Permission,
        permission: name.to_owned(),
        title: clip(&format!("{name}: {title}"), 300),
        patterns,
        detail: json!({
            "rpc_id": id,
            "options": params.get("options"),
            "tool_call": clip_json(call),
        }),
    }
}

fn error_text(error: &Value) -> String {
    let message = text(error, "message");
    let data = error.get("data").filter(|d| !d.is_null());
    let words = match data {
        Some(Value::String(s)) => format!("{message}: {s}"),
        Some(other) => format!("{message}: {other}"),
        None => message.to_owned(),
    };
    clip(&words, EVENT_TEXT_MAX)
}

fn clip_json(value: &Value) -> Value {
    let text = value.to_string();
    if text.len() <= EVENT_TEXT_MAX {
        value.clone()
    } else {
        json!(clip(&text, EVENT_TEXT_MAX))
    }
}

#[cfg(test)]
#[path = "mapping_tests.rs"]
mod tests;
