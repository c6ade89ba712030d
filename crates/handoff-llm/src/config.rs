//! Which provider, model and endpoint a client talks to.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The wire format (and default endpoint) of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    Openai,
    /// OpenAI Responses (`POST /v1/responses`).
    OpenaiResponses,
    /// Google Gemini (`POST /v1beta/models/{model}:generateContent`).
    Gemini,
    /// Any OpenAI-compatible Chat Completions server (xAI, vLLM, llama.cpp, Ollama …); needs
    /// a `base_url`.
    OpenaiCompatible,
}

impl Provider {
    /// The provider's config name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
            Provider::OpenaiResponses => "openai_responses",
            Provider::Gemini => "gemini",
            Provider::OpenaiCompatible => "openai_compatible",
        }
    }

    /// Parses a config name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "anthropic" => Provider::Anthropic,
            "openai" => Provider::Openai,
            "openai_responses" => Provider::OpenaiResponses,
            "gemini" | "google" => Provider::Gemini,
            "openai_compatible" | "xai" | "local" => Provider::OpenaiCompatible,
            _ => return None,
        })
    }

    /// The public endpoint, up to the API version segment.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Provider::Anthropic => Some("https://api.anthropic.com"),
            Provider::Openai | Provider::OpenaiResponses => Some("https://api.openai.com/v1"),
            Provider::Gemini => Some("https://generativelanguage.googleapis.com"),
            Provider::OpenaiCompatible => None,
        }
    }
}

/// Prices per million tokens, for cost accounting.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pricing {
    /// USD per million input tokens.
    pub input_per_mtok: f64,
    /// USD per million output tokens.
    pub output_per_mtok: f64,
}

/// One client's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// Wire format.
    pub provider: Provider,
    /// Model name as the provider knows it.
    pub model: String,
    /// The key, already read from the environment variable the configuration names.
    pub api_key: Option<String>,
    /// Endpoint: Anthropic and Gemini without the version segment, OpenAI formats with `/v1`.
    pub base_url: Option<String>,
    /// Bound on one HTTP attempt.
    pub timeout: Duration,
    /// Retries after the first attempt (408/429/5xx, connection failures).
    pub max_retries: u32,
    /// First back-off; doubled per retry, with jitter, capped at 30 s.
    pub backoff: Duration,
    /// Most output tokens requested.
    pub max_output_tokens: u32,
    /// Prices, when known.
    pub pricing: Option<Pricing>,
}

impl LlmConfig {
    /// Settings with Handoff's defaults: 60 s timeout, 3 retries from 500 ms, 4096 output tokens.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            api_key: None,
            base_url: None,
            timeout: Duration::from_secs(60),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_output_tokens: 4096,
            pricing: None,
        }
    }

    /// The endpoint in use, without a trailing slash.
    pub fn base_url(&self) -> Option<String> {
        self.base_url
            .as_deref()
            .or(self.provider.default_base_url())
            .map(|u| u.trim_end_matches('/').to_owned())
    }
}
