//! OpenCode's event stream, read as what it means for one task: progress to record, requests
//! to relay, and the signals (busy, idle, retry, error) that decide how the run ends.

use std::collections::HashSet;

use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};

use crate::{
    InputKind, InputRequest,
    text::{EVENT_TEXT_MAX, clip},
};

/// What one OpenCode event means for the run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Signal {
    /// Progress to record.
    Event(NewEvent),
    /// An assistant text part finished (the last one is the final answer).
    Answer(String),
    /// The executor waits for an answer.
    Input(InputRequest),
    /// A request was answered.
    InputSettled(String),
    /// The session started working.
    Busy,
    /// The provider failed and OpenCode will try again.
    Retry {
        /// OpenCode's attempt counter.
        attempt: u64,
        /// The provider's message.
        message: String,
    },
    /// The session stopped working.
    Idle,
    /// The session failed.
    Error(String),
    /// The session's turn was aborted.
    Aborted,
}

/// Reads events of one session (and the sub-agent sessions it starts).
#[derive(Debug)]
pub(crate) struct SessionEvents {
    main: String,
    /// Sub-agent sessions started by ours (their `parentID` is one of ours).
    children: HashSet<String>,
    /// Tool parts already reported in a given state, so repeats are not recorded twice.
    seen_tool_states: HashSet<(String, String)>,
}

impl SessionEvents {
    pub fn new(session: &str) -> Self {
        Self {
            main: session.to_owned(),
            children: HashSet::new(),
            seen_tool_states: HashSet::new(),
        }
    }

    fn ours(&self, session: Option<&str>) -> bool {
        session.is_some_and(|s| s == self.main || self.children.contains(s))
    }

    /// What `event` (`{type, properties}`) means for this task; nothing when it is not ours.
    pub fn read(&mut self, event: &Value) -> Vec<Signal> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let props = event.get("properties").unwrap_or(&Value::Null);
        let session = props.get("sessionID").and_then(Value::as_str);
        if kind == "session.created" {
            let info = props.get("info").unwrap_or(&Value::Null);
            let parent = info.get("parentID").and_then(Value::as_str);
            if let (true, Some(id)) = (self.ours(parent), info.get("id").and_then(Value::as_str)) {
                self.children.insert(id.to_owned());
            }
            return Vec::new();
        }
        if !self.ours(session) {
            return Vec::new();
        }
        // Sub-agent sessions report progress, but only the task's own session ends the run.
        let main = session == Some(self.main.as_str());
        match kind {
            "message.part.updated" => self.part(props.get("part").unwrap_or(&Value::Null), main),
            "session.status" if main => status(props.get("status").unwrap_or(&Value::Null)),
            "session.idle" if main => vec![Signal::Idle],
            "session.error" if main => error(props.get("error").unwrap_or(&Value::Null)),
            "session.error" => error(props.get("error").unwrap_or(&Value::Null))
                .into_iter()
                .filter_map(|s| match s {
                    Signal::Error(message) => Some(Signal::Event(NewEvent::new(
                        EventKind::Error,
                        format!("sub-agent: {message}"),
                    ))),
                    _ => None,
                })
                .collect(),
            "permission.asked" => vec![Signal::Input(permission(props))],
            "question.asked" => vec![Signal::Input(question(props))],
            "permission.replied" | "question.replied" | "question.rejected" => props
                .get("requestID")
                .and_then(Value::as_str)
                .map(|id| vec![Signal::InputSettled(id.to_owned())])
                .unwrap_or_default(),
            "session.diff" => diff(props.get("diff").unwrap_or(&Value::Null)),
            "todo.updated" => todos(props.get("todos").unwrap_or(&Value::Null)),
            _ => Vec::new(),
        }
    }

    fn part(&mut self, part: &Value, main: bool) -> Vec<Signal> {
        let text = |key: &str| part.get(key).and_then(Value::as_str).unwrap_or("");
        match text("type") {
            "tool" => {
                let state = part.get("state").unwrap_or(&Value::Null);
                let status = state.get("status").and_then(Value::as_str).unwrap_or("");
                if !self
                    .seen_tool_states
                    .insert((text("id").to_owned(), status.to_owned()))
                {
                    return Vec::new();
                }
                vec![Signal::Event(tool_event(
                    text("tool"),
                    text("callID"),
                    status,
                    state,
                ))]
            }
            "text" => {
                let finished = part.pointer("/time/end").is_some_and(|t| !t.is_null());
                let synthetic = part.get("synthetic").and_then(Value::as_bool) == Some(true);
                if !finished || synthetic || text("text").trim().is_empty() {
                    return Vec::new();
                }
                let mut signals = vec![Signal::Event(NewEvent::new(
                    EventKind::Text,
                    clip(text("text"), EVENT_TEXT_MAX),
                ))];
                if main {
                    signals.push(Signal::Answer(text("text").to_owned()));
                }
                signals
            }
            "patch" => {
                let files = part.get("files").cloned().unwrap_or(Value::Null);
                let count = files.as_array().map_or(0, Vec::len);
                vec![Signal::Event(
                    NewEvent::new(EventKind::Diff, format!("{count} file(s) changed"))
                        .with_data(json!({ "files": files })),
                )]
            }
            "step-finish" => vec![Signal::Event(
                NewEvent::new(
                    EventKind::Log,
                    format!("model step finished ({})", text("reason")),
                )
                .with_data(json!({
                    "reason": part.get("reason"),
                    "tokens": part.get("tokens"),
                    "cost": part.get("cost"),
                })),
            )],
            _ => Vec::new(),
        }
    }
}

fn tool_event(tool: &str, call: &str, status: &str, state: &Value) -> NewEvent {
    let title = state.get("title").and_then(Value::as_str);
    let message = match (status, title) {
        ("error", _) => format!(
            "{tool} failed: {}",
            clip(
                state
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error"),
                500
            )
        ),
        (_, Some(title)) if !title.is_empty() => format!("{tool} {status}: {title}"),
        _ => format!("{tool} {status}"),
    };
    let mut data = json!({ "tool": tool, "call_id": call, "status": status });
    if let Some(title) = title {
        data["title"] = json!(title);
    }
    if let Some(input) = state
        .get("input")
        .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
    {
        data["input"] = clip_json(input);
    }
    if let Some(output) = state.get("output").and_then(Value::as_str) {
        data["output"] = json!(clip(output, EVENT_TEXT_MAX));
    }
    NewEvent::new(EventKind::Tool, message).with_data(data)
}

fn status(status: &Value) -> Vec<Signal> {
    match status.get("type").and_then(Value::as_str) {
        Some("busy") => vec![Signal::Busy],
        Some("idle") => vec![Signal::Idle],
        Some("retry") => vec![Signal::Retry {
            attempt: status.get("attempt").and_then(Value::as_u64).unwrap_or(0),
            message: status
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("provider error")
                .to_owned(),
        }],
        _ => Vec::new(),
    }
}

fn error(error: &Value) -> Vec<Signal> {
    let name = error.get("name").and_then(Value::as_str).unwrap_or("Error");
    if name == "MessageAbortedError" {
        return vec![Signal::Aborted];
    }
    let message = error
        .pointer("/data/message")
        .and_then(Value::as_str)
        .or_else(|| error.get("message").and_then(Value::as_str))
        .unwrap_or("unknown error");
    vec![Signal::Error(format!("{name}: {message}"))]
}

fn permission(props: &Value) -> InputRequest {
    let permission = props
        .get("permission")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    let patterns: Vec<String> = props
        .get("patterns")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    InputRequest {
        id: props
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        kind: InputKind::Permission,
        title: format!("allow {permission} on {}?", patterns.join(", ")),
        permission,
        patterns,
        detail: json!({
            "metadata": props.get("metadata"),
            "always": props.get("always"),
            "tool": props.get("tool"),
        }),
    }
}

fn question(props: &Value) -> InputRequest {
    let questions = props.get("questions").cloned().unwrap_or(Value::Null);
    let title = questions
        .as_array()
        .map(|qs| {
            qs.iter()
                .filter_map(|q| q.get("question").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" / ")
        })
        .unwrap_or_default();
    InputRequest {
        id: props
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        kind: InputKind::Question,
        permission: "question".to_owned(),
        patterns: Vec::new(),
        title,
        detail: json!({ "questions": questions }),
    }
}

fn diff(diff: &Value) -> Vec<Signal> {
    let Some(files) = diff.as_array().filter(|f| !f.is_empty()) else {
        return Vec::new();
    };
    let summary: Vec<Value> = files
        .iter()
        .map(|f| {
            json!({
                "file": f.get("file").or_else(|| f.get("path")),
                "status": f.get("status"),
                "additions": f.get("additions"),
                "deletions": f.get("deletions"),
            })
        })
        .collect();
    vec![Signal::Event(
        NewEvent::new(
            EventKind::Diff,
            format!("{} file(s) differ from the start", files.len()),
        )
        .with_data(json!({ "files": summary })),
    )]
}

fn todos(todos: &Value) -> Vec<Signal> {
    let Some(list) = todos.as_array() else {
        return Vec::new();
    };
    let done = list
        .iter()
        .filter(|t| t.get("status").and_then(Value::as_str) == Some("completed"))
        .count();
    vec![Signal::Event(
        NewEvent::new(
            EventKind::Log,
            format!("todo list: {done}/{} done", list.len()),
        )
        .with_data(json!({ "todos": todos })),
    )]
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
