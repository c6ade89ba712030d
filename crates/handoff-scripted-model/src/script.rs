//! The script: which reply each conversation state gets. Deserialized from JSON; unknown fields
//! are rejected so a typo in a test script fails loudly instead of silently changing replies.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ModelError;

/// A whole script: scenarios plus the fallback replies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Scenarios, tried in order; the first whose `match` occurs in the user message wins.
    #[serde(default)]
    pub scenarios: Vec<Scenario>,
    /// Reply when no scenario matches, or a scenario has run out of turns.
    #[serde(default = "default_reply")]
    pub default: Turn,
    /// Reply to requests that offer no tools (title generators and other side requests).
    #[serde(default = "untooled_reply")]
    pub untooled: Turn,
    /// Model names listed by `GET /v1/models`; the first is used when a request names none.
    #[serde(default = "default_models")]
    pub models: Vec<String>,
    /// The provider key completion requests must carry (`Authorization: Bearer` or
    /// `x-api-key`); a request with another, or none, is answered 401 in its wire's error
    /// shape and selects nothing. Unset: any key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
}

/// One scripted conversation, selected by a substring of the last real user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Optional label for logs; defaults to the `match` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Substring (case-sensitive) of the user message that selects this scenario.
    #[serde(rename = "match")]
    pub matches: String,
    /// Further substrings the user message must all contain (e.g. a cycle number).
    #[serde(default, rename = "and", skip_serializing_if = "Vec::is_empty")]
    pub and: Vec<String>,
    /// Only requests to this API (e.g. the judge on `anthropic`, the agent on `chat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<crate::log::Api>,
    /// Also answers requests without tools (a judge asking for JSON), before `untooled`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untooled: bool,
    /// Replies by turn index (assistant turns since the user message).
    pub turns: Vec<Turn>,
}

/// One model reply. Fields combine: e.g. `delay_ms` with `text`, or `text` then `hang`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Assistant text, streamed in a few chunks; `{{cwd}}` and `{{capture:REGEX}}` are substituted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls, emitted after the text; several are parallel calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Answer with this HTTP error instead of a completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorReply>,
    /// Wait this long before answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Wait until this file exists before answering (looked for every 100 ms, for at most
    /// ten minutes): a test holds the reply until it says so. `{{capture:…}}` is substituted,
    /// so the conversation can name the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_file: Option<String>,
    /// Send the start of the reply, then never finish it (until the client goes away or the
    /// server shuts down).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hang: bool,
    /// End the reply as cut off at the output limit: finish reason `length` (Chat),
    /// `max_tokens` (Anthropic), `MAX_TOKENS` (Gemini), status `incomplete` (Responses).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// A tool call the model makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The tool's name exactly as the agent declared it (e.g. `write`, `Write`, `exec_command`).
    pub name: String,
    /// Arguments: normally a JSON object; a string is passed through raw (freeform tools).
    /// `{{cwd}}` and `{{capture:REGEX}}` (see the capture module) are substituted in every string.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

/// An HTTP error reply, rendered in the shape of the provider being called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorReply {
    /// HTTP status (400..=599).
    pub status: u16,
    /// Provider error type, e.g. `invalid_request_error`, `server_error`, `overloaded_error`.
    #[serde(rename = "type", default = "default_error_type")]
    pub kind: String,
    /// Human-readable message.
    pub message: String,
}

impl Script {
    /// Parses a script from JSON text and validates it.
    pub fn from_json(text: &str) -> Result<Script, ModelError> {
        let script: Script = serde_json::from_str(text)?;
        script.validate()?;
        Ok(script)
    }

    /// Reads, parses and validates a script file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Script, ModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::ReadScript {
            path: path.to_path_buf(),
            source,
        })?;
        Script::from_json(&text)
    }

    /// A script with the given scenarios and the default fallback replies.
    pub fn new(scenarios: Vec<Scenario>) -> Script {
        Script {
            scenarios,
            ..Script::default()
        }
    }

    /// Checks what serde cannot: error statuses must be HTTP error statuses.
    pub fn validate(&self) -> Result<(), ModelError> {
        let fallbacks = [("default", &self.default), ("untooled", &self.untooled)];
        let scenario_turns = self
            .scenarios
            .iter()
            .flat_map(|s| s.turns.iter().map(move |t| (s.label(), t)));
        for (label, turn) in fallbacks.into_iter().chain(scenario_turns) {
            if let Some(error) = &turn.error
                && !(400..=599).contains(&error.status)
            {
                return Err(ModelError::InvalidStatus {
                    scenario: label.to_string(),
                    status: error.status,
                });
            }
        }
        Ok(())
    }

    /// The model name used when a request does not name one.
    pub fn default_model(&self) -> &str {
        self.models.first().map_or("mock-model", String::as_str)
    }
}

impl Default for Script {
    fn default() -> Script {
        Script {
            scenarios: Vec::new(),
            default: default_reply(),
            untooled: untooled_reply(),
            models: default_models(),
            api_key: None,
        }
    }
}

impl Scenario {
    /// A scenario selected by `matches`, replying with `turns` in order.
    pub fn new(matches: impl Into<String>, turns: Vec<Turn>) -> Scenario {
        Scenario {
            name: None,
            matches: matches.into(),
            and: Vec::new(),
            api: None,
            untooled: false,
            turns,
        }
    }

    /// The name logged for this scenario.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.matches)
    }
}

impl Turn {
    /// A plain text reply.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn {
            text: Some(text.into()),
            ..Turn::default()
        }
    }

    /// A reply making one tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Turn {
        Turn {
            tool_calls: vec![ToolCall {
                name: name.into(),
                arguments,
            }],
            ..Turn::default()
        }
    }

    /// An HTTP error reply.
    pub fn error(status: u16, kind: impl Into<String>, message: impl Into<String>) -> Turn {
        Turn {
            error: Some(ErrorReply {
                status,
                kind: kind.into(),
                message: message.into(),
            }),
            ..Turn::default()
        }
    }

    /// A reply that starts and never finishes.
    pub fn hang() -> Turn {
        Turn {
            hang: true,
            ..Turn::default()
        }
    }
}

fn default_reply() -> Turn {
    Turn::text("No scenario matched.")
}

fn untooled_reply() -> Turn {
    Turn::text("Scripted title")
}

fn default_models() -> Vec<String> {
    vec!["mock-model".to_string()]
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

fn default_error_type() -> String {
    "api_error".to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let script = Script::from_json(
            r#"{
              "scenarios": [
                {"match": "CREATE-FILE", "turns": [
                   {"tool_calls": [{"name": "write", "arguments": {"filePath": "{{cwd}}/hello.txt", "content": "hello\n"}}]},
                   {"text": "Created hello.txt."}
                ]},
                {"match": "BAD-REQUEST", "turns": [{"error": {"status": 400, "type": "invalid_request_error", "message": "nope"}}]},
                {"match": "HANG", "turns": [{"hang": true}]},
                {"match": "SLOW", "turns": [{"delay_ms": 1500, "text": "slow answer"}]}
              ],
              "default": {"text": "No scenario matched."},
              "untooled": {"text": "Scripted title"}
            }"#,
        )
        .unwrap();
        assert_eq!(script.scenarios.len(), 4);
        assert_eq!(
            script.scenarios[0].turns[0],
            Turn::tool_call(
                "write",
                json!({"filePath": "{{cwd}}/hello.txt", "content": "hello\n"})
            )
        );
        assert_eq!(
            script.scenarios[1].turns[0],
            Turn::error(400, "invalid_request_error", "nope")
        );
        assert_eq!(script.scenarios[2].turns[0], Turn::hang());
        assert_eq!(script.scenarios[3].turns[0].delay_ms, Some(1500));
        assert_eq!(script.default_model(), "mock-model");
    }

    #[test]
    fn fallbacks_default_when_absent() {
        let script = Script::from_json("{}").unwrap();
        assert_eq!(script, Script::default());
        assert_eq!(script.untooled, Turn::text("Scripted title"));
    }

    #[test]
    fn rejects_unknown_fields_and_bad_statuses() {
        assert!(matches!(
            Script::from_json(r#"{"scenarios": [{"match": "x", "turns": [{"txt": "typo"}]}]}"#),
            Err(ModelError::ParseScript { .. })
        ));
        let err = Script::from_json(
            r#"{"scenarios": [{"match": "x", "turns": [{"error": {"status": 200, "message": "m"}}]}]}"#,
        )
        .unwrap_err();
        assert!(matches!(err, ModelError::InvalidStatus { status: 200, .. }));
    }

    #[test]
    fn a_turn_can_be_cut_off_at_the_output_limit() {
        let script = Script::from_json(
            r#"{"scenarios": [{"match": "x", "turns": [{"text": "half an ans", "truncated": true}]}]}"#,
        )
        .unwrap();
        assert!(script.scenarios[0].turns[0].truncated);
        assert!(!Turn::text("whole").truncated);
    }
}
