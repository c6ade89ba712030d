//! Claude Code's stream-json output, read as what it means for one task.

use std::collections::HashMap;

use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};

use crate::{
    InputKind, InputRequest,
    text::{EVENT_TEXT_MAX, clip},
};

/// What one line of Claude Code's output means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Signal {
    /// Progress to record.
    Event(NewEvent),
    /// Assistant text (the last one is the final answer).
    Answer(String),
    /// A permission request (`can_use_tool`).
    Input(InputRequest),
    /// A control request Handoff does not serve; it gets an error reply.
    Unsupported(String),
    /// A turn ended.
    TurnEnd {
        /// The turn failed.
        is_error: bool,
        /// Claude's summary of it (the answer, or the error).
        text: String,
    },
}

/// Remembers tool names by call id, so results can say which tool they belong to.
#[derive(Debug, Default)]
pub(crate) struct StreamReader {
    tools: HashMap<String, String>,
}

impl StreamReader {
    pub fn read(&mut self, line: &Value) -> Vec<Signal> {
        let text =
            |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        match line.get("type").and_then(Value::as_str).unwrap_or("") {
            "system" => system(line),
            "assistant" => self.assistant(line.pointer("/message/content")),
            "user" => self.results(line.pointer("/message/content")),
            "result" => {
                let is_error = line
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let mut summary = text(line, "result");
                if summary.is_empty() {
                    summary = text(line, "terminal_reason");
                }
                vec![
                    Signal::Event(
                        NewEvent::new(
                            EventKind::Log,
                            format!(
                                "turn finished{}",
                                if is_error { " with an error" } else { "" }
                            ),
                        )
                        .with_data(json!({
                            "num_turns": line.get("num_turns"),
                            "total_cost_usd": line.get("total_cost_usd"),
                            "terminal_reason": line.get("terminal_reason"),
                            "session_id": line.get("session_id"),
                        })),
                    ),
                    Signal::TurnEnd {
                        is_error,
                        text: summary,
                    },
                ]
            }
            "control_request" => {
                let id = text(line, "request_id");
                let request = line.get("request").unwrap_or(&Value::Null);
                if request.get("subtype").and_then(Value::as_str) == Some("can_use_tool") {
                    vec![Signal::Input(permission(&id, request))]
                } else {
                    vec![Signal::Unsupported(id)]
                }
            }
            _ => Vec::new(),
        }
    }

    fn assistant(&mut self, content: Option<&Value>) -> Vec<Signal> {
        let mut signals = Vec::new();
        for block in content.and_then(Value::as_array).into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    if !text.trim().is_empty() {
                        signals.push(Signal::Event(NewEvent::new(
                            EventKind::Text,
                            clip(text, EVENT_TEXT_MAX),
                        )));
                        signals.push(Signal::Answer(text.to_owned()));
                    }
                }
                Some("tool_use") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                    self.tools.insert(id.to_owned(), name.to_owned());
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    signals.push(Signal::Event(
                        NewEvent::new(EventKind::Tool, format!("{name} running"))
                            .with_data(json!({ "tool": name, "call_id": id, "status": "running", "input": input })),
                    ));
                }
                _ => {}
            }
        }
        signals
    }

    fn results(&mut self, content: Option<&Value>) -> Vec<Signal> {
        let mut signals = Vec::new();
        for block in content.and_then(Value::as_array).into_iter().flatten() {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or("");
            let name = self
                .tools
                .get(id)
                .cloned()
                .unwrap_or_else(|| "tool".to_owned());
            let failed = block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let output = match block.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            let (status, message) = if failed {
                ("error", format!("{name} failed: {}", clip(&output, 500)))
            } else {
                ("completed", format!("{name} completed"))
            };
            signals.push(Signal::Event(NewEvent::new(EventKind::Tool, message).with_data(json!({
                "tool": name, "call_id": id, "status": status, "output": clip(&output, EVENT_TEXT_MAX),
            }))));
        }
        signals
    }
}

fn system(line: &Value) -> Vec<Signal> {
    match line.get("subtype").and_then(Value::as_str) {
        Some("init") => vec![Signal::Event(
            NewEvent::new(EventKind::Log, "Claude Code session started").with_data(json!({
                "session_id": line.get("session_id"),
                "model": line.get("model"),
                "cwd": line.get("cwd"),
                "permission_mode": line.get("permissionMode"),
            })),
        )],
        Some("api_retry") => vec![Signal::Event(
            NewEvent::new(
                EventKind::Error,
                "model provider failed; Claude Code retries",
            )
            .with_data(json!({ "retry": true, "detail": line })),
        )],
        _ => Vec::new(),
    }
}

/// Claude Code's tools named as Handoff's permission rules name them (OpenCode's names), with
/// the pattern the rule matches against.
fn permission(id: &str, request: &Value) -> InputRequest {
    let tool = request
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let input = request.get("input").cloned().unwrap_or(Value::Null);
    let field = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
    let (permission, pattern) = match tool {
        "Bash" => ("bash".to_owned(), field("command")),
        "Write" | "Edit" | "MultiEdit" => ("edit".to_owned(), field("file_path")),
        "NotebookEdit" => ("edit".to_owned(), field("notebook_path")),
        "Read" => ("read".to_owned(), field("file_path")),
        "Glob" => ("glob".to_owned(), field("pattern")),
        "Grep" => ("grep".to_owned(), field("pattern")),
        "WebFetch" => ("webfetch".to_owned(), field("url")),
        "WebSearch" => ("websearch".to_owned(), field("query")),
        other => (other.to_ascii_lowercase(), None),
    };
    let patterns = vec![pattern.unwrap_or_else(|| "*".to_owned())];
    InputRequest {
        id: id.to_owned(),
        kind: InputKind::Permission,
        title: format!("allow {permission} on {}?", patterns.join(", ")),
        permission,
        patterns,
        detail: json!({ "tool_name": tool, "input": input, "tool_use_id": request.get("tool_use_id") }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_reads_as_tool_use_result_text_and_end() {
        let mut reader = StreamReader::default();
        let tool = reader.read(&json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"file_path": "/w/a.txt", "content": "x"}}
        ]}}));
        let [Signal::Event(e)] = tool.as_slice() else {
            panic!("{tool:?}")
        };
        assert_eq!(
            (e.kind, e.message.as_str()),
            (EventKind::Tool, "Write running")
        );
        let result = reader.read(&json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "File created"}
        ]}}));
        let [Signal::Event(e)] = result.as_slice() else {
            panic!("{result:?}")
        };
        assert_eq!(e.message, "Write completed");
        let text = reader.read(&json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}}));
        assert!(text.contains(&Signal::Answer("Done.".to_owned())));
        let end = reader
            .read(&json!({"type": "result", "is_error": true, "result": "API Error: 400 nope"}));
        assert_eq!(
            end[1],
            Signal::TurnEnd {
                is_error: true,
                text: "API Error: 400 nope".to_owned()
            }
        );
    }

    #[test]
    fn can_use_tool_becomes_a_permission_request_in_handoff_terms() {
        let mut reader = StreamReader::default();
        let asked = reader.read(
            &json!({"type": "control_request", "request_id": "r7", "request": {
                "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "touch x"}
            }}),
        );
        let [Signal::Input(request)] = asked.as_slice() else {
            panic!("{asked:?}")
        };
        assert_eq!(request.id, "r7");
        assert_eq!(request.permission, "bash");
        assert_eq!(request.patterns, vec!["touch x".to_owned()]);
        assert_eq!(request.detail["input"]["command"], "touch x");
        let other = reader.read(&json!({"type": "control_request", "request_id": "r8", "request": {"subtype": "hook_callback"}}));
        assert_eq!(other, vec![Signal::Unsupported("r8".to_owned())]);
    }
}
