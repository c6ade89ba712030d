//! What `codex app-server` says (JSON-RPC notifications, requests and answers), read as what it
//! means for one task.

use std::collections::HashMap;

use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};

use crate::{
    InputKind, InputRequest,
    agent_process::jsonrpc::{Incoming, id_text, incoming},
    text::{EVENT_TEXT_MAX, clip},
};

/// What one message from Codex means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Signal {
    /// Progress to record.
    Event(NewEvent),
    /// An agent message (the last one is the final answer).
    Answer(String),
    /// An approval or a question Codex waits on.
    Input(InputRequest),
    /// Codex no longer waits on this request (answered, or withdrawn by an interrupt).
    Settled(String),
    /// A request Handoff does not serve; it gets an error answer.
    Unsupported(Value),
    /// The answer to one of Handoff's requests: its id, then the result or the error message.
    Response(String, Result<Value, String>),
    /// A turn began.
    TurnStarted(String),
    /// A user message reached the thread, with the client id Handoff gave it (if any).
    UserMessage(Option<String>),
    /// A turn ended.
    TurnEnd(TurnEnd),
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnEnd {
    /// The turn.
    pub id: String,
    /// `completed`, `interrupted` or `failed`.
    pub status: String,
    /// Why it failed, in the provider's words where Codex kept them.
    pub error: Option<String>,
}

/// Remembers what later messages refer back to: patches by item (their approvals name only the
/// item), the last fatal error, each turn's diff.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    patches: HashMap<String, Value>,
    last_error: Option<String>,
    turn_diff: Option<String>,
    /// The final diff of every turn that changed files.
    pub diffs: Vec<String>,
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

impl Reader {
    /// Reads one JSON-RPC message.
    pub fn read(&mut self, message: &Value) -> Vec<Signal> {
        match incoming(message) {
            Incoming::Request { method, id, params } => vec![self.request(method, id, params)],
            Incoming::Notification { method, params } => self.notification(method, params),
            Incoming::Response { id, result } => {
                vec![Signal::Response(id, result.map_err(error_text))]
            }
            Incoming::Nothing => Vec::new(),
        }
    }

    fn notification(&mut self, method: &str, params: &Value) -> Vec<Signal> {
        match method {
            "item/started" => self.item_started(params.get("item").unwrap_or(&Value::Null)),
            "item/completed" => self.item_completed(params.get("item").unwrap_or(&Value::Null)),
            "turn/started" => {
                let id = params.pointer("/turn/id").and_then(Value::as_str);
                let id = id.unwrap_or("").to_owned();
                self.turn_diff = None;
                self.last_error = None;
                vec![
                    Signal::Event(
                        NewEvent::new(EventKind::Log, "Codex turn started")
                            .with_data(json!({ "turn_id": id })),
                    ),
                    Signal::TurnStarted(id),
                ]
            }
            "turn/completed" => self.turn_completed(params.get("turn").unwrap_or(&Value::Null)),
            "turn/diff/updated" => {
                self.turn_diff = Some(text(params, "diff").to_owned());
                Vec::new()
            }
            "error" => {
                let error = params.get("error").unwrap_or(&Value::Null);
                let retry = params.get("willRetry").and_then(Value::as_bool) == Some(true);
                let message = turn_error(error);
                let summary = if retry {
                    format!("model provider failed; Codex retries: {message}")
                } else {
                    self.last_error = Some(message.clone());
                    format!("Codex error: {message}")
                };
                vec![Signal::Event(
                    NewEvent::new(EventKind::Error, clip(&summary, EVENT_TEXT_MAX))
                        .with_data(json!({ "retry": retry, "error": error })),
                )]
            }
            "warning" | "configWarning" | "deprecationNotice" | "guardianWarning" => {
                let words = params
                    .get("message")
                    .or_else(|| params.get("summary"))
                    .and_then(Value::as_str)
                    .unwrap_or(method);
                vec![Signal::Event(
                    NewEvent::new(
                        EventKind::Log,
                        format!("Codex: {}", clip(words, EVENT_TEXT_MAX)),
                    )
                    .with_data(json!({ "method": method, "params": params })),
                )]
            }
            "serverRequest/resolved" => params
                .get("requestId")
                .map(|id| vec![Signal::Settled(id_text(id))])
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    fn turn_completed(&mut self, turn: &Value) -> Vec<Signal> {
        let id = text(turn, "id").to_owned();
        let status = turn
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("completed")
            .to_owned();
        let error = turn
            .get("error")
            .filter(|e| !e.is_null())
            .map(turn_error)
            .or_else(|| {
                (status == "failed")
                    .then(|| self.last_error.take())
                    .flatten()
            });
        let mut signals = Vec::new();
        if let Some(diff) = self.turn_diff.take().filter(|d| !d.trim().is_empty()) {
            signals.push(Signal::Event(
                NewEvent::new(EventKind::Diff, "the turn changed files")
                    .with_data(json!({ "turn_id": id, "diff": clip(&diff, EVENT_TEXT_MAX) })),
            ));
            self.diffs.push(diff);
        }
        signals.push(Signal::Event(
            NewEvent::new(EventKind::Log, format!("Codex turn {status}")).with_data(json!({
                "turn_id": id, "status": status, "error": error,
                "duration_ms": turn.get("durationMs"),
            })),
        ));
        signals.push(Signal::TurnEnd(TurnEnd { id, status, error }));
        signals
    }

    fn item_started(&mut self, item: &Value) -> Vec<Signal> {
        let id = text(item, "id");
        match text(item, "type") {
            "userMessage" => vec![Signal::UserMessage(
                item.get("clientId")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            )],
            "commandExecution" => vec![tool(
                "shell",
                id,
                "running",
                "shell running".to_owned(),
                json!({ "input": { "command": command_of(item), "cwd": item.get("cwd") } }),
            )],
            "fileChange" => {
                let changes = item.get("changes").cloned().unwrap_or(Value::Null);
                let files = paths(&changes);
                self.patches.insert(id.to_owned(), changes);
                vec![tool(
                    "apply_patch",
                    id,
                    "running",
                    "apply_patch running".to_owned(),
                    json!({ "input": { "files": files } }),
                )]
            }
            "mcpToolCall" | "dynamicToolCall" => {
                let name = other_tool_name(item);
                vec![tool(
                    &name,
                    id,
                    "running",
                    format!("{name} running"),
                    json!({ "input": item.get("arguments") }),
                )]
            }
            "webSearch" => vec![tool(
                "web_search",
                id,
                "running",
                "web_search running".to_owned(),
                json!({ "input": { "query": item.get("query") } }),
            )],
            _ => Vec::new(),
        }
    }

    fn item_completed(&mut self, item: &Value) -> Vec<Signal> {
        let id = text(item, "id");
        let status = text(item, "status");
        match text(item, "type") {
            "agentMessage" => {
                let words = text(item, "text");
                if words.trim().is_empty() {
                    return Vec::new();
                }
                vec![
                    Signal::Event(NewEvent::new(EventKind::Text, clip(words, EVENT_TEXT_MAX))),
                    Signal::Answer(words.to_owned()),
                ]
            }
            "commandExecution" => {
                let exit = item.get("exitCode").and_then(Value::as_i64);
                let (state, message) = match (status, exit) {
                    ("declined", _) => ("declined", "shell declined".to_owned()),
                    ("completed", Some(0) | None) => ("completed", "shell completed".to_owned()),
                    (_, Some(code)) => ("error", format!("shell failed (exit {code})")),
                    (_, None) => ("error", "shell failed".to_owned()),
                };
                let output = text(item, "aggregatedOutput");
                vec![tool(
                    "shell",
                    id,
                    state,
                    message,
                    json!({
                        "input": { "command": command_of(item), "cwd": item.get("cwd") },
                        "exit_code": exit,
                        "duration_ms": item.get("durationMs"),
                        "output": clip(output, EVENT_TEXT_MAX),
                    }),
                )]
            }
            "fileChange" => {
                self.patches.remove(id);
                let changes = item.get("changes").cloned().unwrap_or(Value::Null);
                let state = match status {
                    "completed" => "completed",
                    "declined" => "declined",
                    _ => "error",
                };
                let mut signals = vec![tool(
                    "apply_patch",
                    id,
                    state,
                    format!(
                        "apply_patch {}",
                        if state == "error" { "failed" } else { state }
                    ),
                    json!({ "input": { "files": paths(&changes) } }),
                )];
                if state == "completed" {
                    signals.push(diff_event(&changes));
                }
                signals
            }
            "mcpToolCall" | "dynamicToolCall" => {
                let name = other_tool_name(item);
                let failed = matches!(status, "failed" | "error")
                    || item.get("success").and_then(Value::as_bool) == Some(false);
                let state = if failed { "error" } else { "completed" };
                vec![tool(
                    &name,
                    id,
                    state,
                    format!("{name} {}", if failed { "failed" } else { "completed" }),
                    json!({ "error": item.get("error") }),
                )]
            }
            "webSearch" => vec![tool(
                "web_search",
                id,
                "completed",
                "web_search completed".to_owned(),
                json!({ "input": { "query": item.get("query") } }),
            )],
            "contextCompaction" => vec![Signal::Event(NewEvent::new(
                EventKind::Log,
                "Codex compacted its context",
            ))],
            _ => Vec::new(),
        }
    }

    fn request(&mut self, method: &str, id: &Value, params: &Value) -> Signal {
        match method {
            "item/commandExecution/requestApproval" => {
                let command = params
                    .get("command")
                    .and_then(Value::as_str)
                    .map(unwrap_shell);
                let pattern = command.clone().unwrap_or_else(|| "*".to_owned());
                Signal::Input(permission(
                    id,
                    "bash",
                    vec![pattern],
                    json!({
                        "method": method,
                        "rpc_id": id,
                        "item_id": params.get("itemId"),
                        "command": params.get("command"),
                        "cwd": params.get("cwd"),
                        "reason": params.get("reason"),
                        "kind": params.get("kind"),
                        "available_decisions": params.get("availableDecisions"),
                    }),
                ))
            }
            "item/fileChange/requestApproval" => {
                let item = text(params, "itemId");
                let changes = self.patches.get(item).cloned().unwrap_or(Value::Null);
                let mut patterns = paths(&changes);
                if patterns.is_empty() {
                    let root = params.get("grantRoot").and_then(Value::as_str);
                    patterns.push(root.unwrap_or("*").to_owned());
                }
                Signal::Input(permission(
                    id,
                    "edit",
                    patterns,
                    json!({
                        "method": method,
                        "rpc_id": id,
                        "item_id": item,
                        "reason": params.get("reason"),
                        "grant_root": params.get("grantRoot"),
                        "changes": summary(&changes),
                    }),
                ))
            }
            "item/tool/requestUserInput" => {
                let questions = params.get("questions").cloned().unwrap_or(Value::Null);
                let title = questions
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|q| q.get("question").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" / ");
                Signal::Input(InputRequest {
                    id: id_text(id),
                    kind: InputKind::Question,
                    permission: "question".to_owned(),
                    patterns: Vec::new(),
                    title,
                    detail: json!({ "method": method, "rpc_id": id, "questions": questions }),
                })
            }
            _ => Signal::Unsupported(id.clone()),
        }
    }
}

fn permission(id: &Value, permission: &str, patterns: Vec<String>, detail: Value) -> InputRequest {
    InputRequest {
        id: id_text(id),
        kind: InputKind::Permission,
        title: format!("allow {permission} on {}?", patterns.join(", ")),
        permission: permission.to_owned(),
        patterns,
        detail,
    }
}

fn tool(name: &str, call: &str, status: &str, message: String, extra: Value) -> Signal {
    let mut data = json!({ "tool": name, "call_id": call, "status": status });
    if let (Some(data), Value::Object(extra)) = (data.as_object_mut(), extra) {
        data.extend(extra);
    }
    Signal::Event(NewEvent::new(EventKind::Tool, message).with_data(data))
}

fn diff_event(changes: &Value) -> Signal {
    let list = changes.as_array().map(Vec::as_slice).unwrap_or_default();
    let diff: String = list
        .iter()
        .map(|c| format!("--- {}\n{}", text(c, "path"), text(c, "diff")))
        .collect::<Vec<_>>()
        .join("\n");
    Signal::Event(
        NewEvent::new(EventKind::Diff, format!("{} file(s) changed", list.len()))
            .with_data(json!({ "files": summary(changes), "diff": clip(&diff, EVENT_TEXT_MAX) })),
    )
}

fn summary(changes: &Value) -> Value {
    changes
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!({ "file": c.get("path"), "kind": c.pointer("/kind/type") }))
        .collect()
}

fn paths(changes: &Value) -> Vec<String> {
    changes
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("path").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

fn other_tool_name(item: &Value) -> String {
    match item.get("server").and_then(Value::as_str) {
        Some(server) => format!("{server}.{}", text(item, "tool")),
        None => text(item, "tool").to_owned(),
    }
}

fn command_of(item: &Value) -> String {
    unwrap_shell(text(item, "command"))
}

/// The script of `bash -lc '<script>'`, the form Codex reports every shell command in; Handoff's
/// rules match what the agent asked to run, not the wrapper.
pub(crate) fn unwrap_shell(command: &str) -> String {
    let Some(words) = shlex::split(command) else {
        return command.to_owned();
    };
    match words.as_slice() {
        [shell, flag, script]
            if matches!(flag.as_str(), "-c" | "-lc")
                && matches!(
                    shell.rsplit('/').next(),
                    Some("bash" | "sh" | "zsh" | "dash")
                ) =>
        {
            script.clone()
        }
        _ => command.to_owned(),
    }
}

/// A turn error in the provider's words: Codex passes a rejected request's body through as the
/// message, so the provider's own `error.message` is dug out of it.
fn turn_error(error: &Value) -> String {
    let message = text(error, "message");
    let inner = serde_json::from_str::<Value>(message)
        .ok()
        .and_then(|body| {
            let error = body.get("error").unwrap_or(&body);
            let words = error.get("message").and_then(Value::as_str)?.to_owned();
            Some(match error.get("type").and_then(Value::as_str) {
                Some(kind) => format!("{words} ({kind})"),
                None => words,
            })
        });
    let mut words = inner.unwrap_or_else(|| message.to_owned());
    if let Some(details) = error.get("additionalDetails").and_then(Value::as_str)
        && !details.is_empty()
        && details != words
    {
        words = format!("{words}: {details}");
    }
    match error.get("codexErrorInfo") {
        Some(Value::String(info)) if info != "other" => format!("{words} [{info}]"),
        Some(Value::Object(info)) => match info.keys().next() {
            Some(key) => format!("{words} [{key}]"),
            None => words,
        },
        _ => words,
    }
}

fn error_text(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(message) => message.trim_end().to_owned(),
        None => error.to_string(),
    }
}

#[cfg(test)]
#[path = "mapping_tests.rs"]
mod tests;
