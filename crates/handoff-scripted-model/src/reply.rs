//! A scripted turn made concrete for one request: `{{cwd}}` substituted, tool call ids
//! assigned, token counts estimated. Wire modules render this; they never see the script.

use serde_json::Value;

use crate::cwd::{substitute_str, substitute_value};
use crate::script::Turn;
use crate::select::Conversation;

/// What the model says in this response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    /// Assistant text, if any.
    pub text: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<Call>,
    /// Estimated prompt tokens.
    pub input_tokens: u64,
    /// Estimated completion tokens.
    pub output_tokens: u64,
    /// Cut off at the output limit.
    pub truncated: bool,
}

/// One concrete tool call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    /// Id suffix unique within the conversation; wires add their own prefix (`call_`, `toolu_`).
    pub key: String,
    /// Tool name.
    pub name: String,
    /// Arguments after substitution.
    pub arguments: Value,
    /// Whether the tool was declared freeform (Responses `custom` tools).
    pub custom: bool,
}

impl Reply {
    /// Makes `turn` concrete for a request of `request_bytes` bytes.
    pub(crate) fn resolve(
        turn: &Turn,
        conversation: &Conversation,
        cwd: Option<&str>,
        request_bytes: usize,
    ) -> Reply {
        let text = turn.text.as_deref().map(|t| substitute_str(t, cwd));
        let tool_calls: Vec<Call> = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| Call {
                // The history length grows with every turn, so ids never repeat in one
                // conversation yet are the same on every run.
                key: format!("{}_{i}", conversation.history_len),
                name: call.name.clone(),
                arguments: substitute_value(&call.arguments, cwd),
                custom: conversation.custom_tools.contains(&call.name),
            })
            .collect();
        let output_chars = text.as_ref().map_or(0, String::len)
            + tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments_string().len())
                .sum::<usize>();
        Reply {
            text,
            tool_calls,
            input_tokens: estimate_tokens(request_bytes),
            output_tokens: estimate_tokens(output_chars),
            truncated: turn.truncated,
        }
    }

    /// Whether the reply ends by asking for tool results.
    pub(crate) fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

impl Call {
    /// Arguments as the JSON text OpenAI-style APIs carry; a string is already that text.
    pub(crate) fn arguments_string(&self) -> String {
        match &self.arguments {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// The raw input of a freeform tool: a string as is, or an object's `input` string.
    pub(crate) fn freeform_input(&self) -> String {
        match self.arguments.get("input") {
            Some(Value::String(s)) => s.clone(),
            _ => self.arguments_string(),
        }
    }

    /// Arguments as the JSON object Anthropic and Gemini require: a string holding JSON is
    /// parsed, any other string is wrapped as `{"input": …}`.
    pub(crate) fn arguments_object(&self) -> Value {
        match &self.arguments {
            Value::Object(_) => self.arguments.clone(),
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => v,
                _ => serde_json::json!({ "input": s }),
            },
            other => serde_json::json!({ "input": other }),
        }
    }
}

/// Roughly four characters per token: deterministic, and plausible enough for agents that
/// track context usage.
fn estimate_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX).max(1)
}

/// Splits `text` into at most `parts` pieces on character boundaries, so it streams as
/// several deltas; empty text gives one empty piece.
pub(crate) fn chunks(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(parts.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::script::ToolCall;

    #[test]
    fn resolves_ids_substitution_and_custom_tools() {
        let turn = Turn {
            text: Some("in {{cwd}}".into()),
            tool_calls: vec![
                ToolCall {
                    name: "write".into(),
                    arguments: json!({"filePath": "{{cwd}}/a"}),
                },
                ToolCall {
                    name: "apply_patch".into(),
                    arguments: json!("*** Begin Patch {{cwd}}"),
                },
            ],
            ..Turn::default()
        };
        let conversation = Conversation {
            history_len: 7,
            custom_tools: vec!["apply_patch".into()],
            ..Conversation::default()
        };
        let reply = Reply::resolve(&turn, &conversation, Some("/w"), 400);
        assert_eq!(reply.text.as_deref(), Some("in /w"));
        assert_eq!(reply.tool_calls[0].key, "7_0");
        assert_eq!(reply.tool_calls[1].key, "7_1");
        assert_eq!(reply.tool_calls[0].arguments, json!({"filePath": "/w/a"}));
        assert!(!reply.tool_calls[0].custom);
        assert!(reply.tool_calls[1].custom);
        assert_eq!(reply.tool_calls[1].arguments_string(), "*** Begin Patch /w");
        assert_eq!(reply.input_tokens, 100);
    }

    #[test]
    fn arguments_object_from_strings() {
        let call = |arguments| Call {
            key: "0_0".into(),
            name: "t".into(),
            arguments,
            custom: false,
        };
        assert_eq!(call(json!("{\"a\":1}")).arguments_object(), json!({"a": 1}));
        assert_eq!(
            call(json!("raw")).arguments_object(),
            json!({"input": "raw"})
        );
        assert_eq!(call(json!({"a": 1})).arguments_string(), "{\"a\":1}");
    }

    #[test]
    fn chunks_split_on_char_boundaries() {
        assert_eq!(chunks("héllo wörld", 3), vec!["héll", "o wö", "rld"]);
        assert_eq!(chunks("ab", 3), vec!["a", "b"]);
        assert_eq!(chunks("", 3), vec![""]);
    }
}
