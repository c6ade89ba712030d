//! The one request and answer shape every wire format maps to.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who speaks a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The caller.
    User,
    /// The model.
    Assistant,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Who.
    pub role: Role,
    /// What.
    pub text: String,
}

impl Turn {
    /// A user turn.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            text: text.into(),
        }
    }
}

/// A request: instructions, turns, and optionally the JSON schema the answer must follow.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// System instructions.
    pub system: String,
    /// The conversation, oldest first (at least one user turn).
    pub turns: Vec<Turn>,
    /// `(name, schema)`: ask for a JSON answer following `schema` (a JSON Schema object) the
    /// way the provider supports best — a strict schema, or a forced tool call (Anthropic).
    pub json_schema: Option<(String, Value)>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
}

/// Tokens used by one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatResponse {
    /// The text (with `json_schema`: the JSON document, as text).
    pub text: String,
    /// Tokens used.
    pub usage: Usage,
    /// Cost in USD, when prices are configured.
    pub cost_usd: Option<f64>,
    /// Why the model stopped, as the provider said it.
    pub stop_reason: Option<String>,
    /// Attempts it took (1 = no retry).
    pub attempts: u32,
}
