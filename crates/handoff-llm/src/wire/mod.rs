//! One module per wire format: how a [`ChatRequest`] becomes an HTTP request, and how the
//! provider's JSON answer becomes text and usage.

pub(crate) mod anthropic;
pub(crate) mod gemini;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;

use serde_json::Value;

use crate::{ChatRequest, LlmConfig, Provider, Usage};

/// An HTTP request ready to send.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpCall {
    /// Full URL.
    pub url: String,
    /// Extra headers (authentication, versions).
    pub headers: Vec<(&'static str, String)>,
    /// JSON body.
    pub body: Value,
}

/// What an answer said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub text: String,
    pub usage: Usage,
    pub stop_reason: Option<String>,
}

/// Builds the HTTP request for `config`'s provider.
pub(crate) fn build(config: &LlmConfig, base: &str, request: &ChatRequest) -> HttpCall {
    match config.provider {
        Provider::Anthropic => anthropic::build(config, base, request),
        Provider::Openai | Provider::OpenaiCompatible => openai_chat::build(config, base, request),
        Provider::OpenaiResponses => openai_responses::build(config, base, request),
        Provider::Gemini => gemini::build(config, base, request),
    }
}

/// Reads a successful answer.
pub(crate) fn parse(provider: Provider, body: &Value) -> Result<Parsed, String> {
    match provider {
        Provider::Anthropic => anthropic::parse(body),
        Provider::Openai | Provider::OpenaiCompatible => openai_chat::parse(body),
        Provider::OpenaiResponses => openai_responses::parse(body),
        Provider::Gemini => gemini::parse(body),
    }
}

/// The message of a provider's error body (all four put it at `error.message`).
pub(crate) fn error_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.chars().take(500).collect())
}

/// The turns as `{role: user|assistant, content}` messages (Anthropic, OpenAI Chat and
/// Responses all take this shape).
fn role_messages(request: &ChatRequest) -> Vec<Value> {
    request
        .turns
        .iter()
        .map(|t| {
            serde_json::json!({
                "role": match t.role { crate::Role::User => "user", crate::Role::Assistant => "assistant" },
                "content": t.text,
            })
        })
        .collect()
}

/// `Authorization: Bearer <key>` when a key is set (the OpenAI formats).
fn bearer(config: &LlmConfig) -> Vec<(&'static str, String)> {
    config
        .api_key
        .iter()
        .map(|k| ("authorization", format!("Bearer {k}")))
        .collect()
}

fn u64_at(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}
