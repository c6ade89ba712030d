//! Thin typed clients for the LLM APIs Handoff's completion evaluator calls (a judge, a
//! manager): one request shape ([`ChatRequest`]: system text, turns, an optional JSON schema the
//! answer must follow), one answer shape ([`ChatResponse`]: text, usage, cost), and one wire
//! module per format — Anthropic Messages, OpenAI Chat Completions (also xAI and local
//! OpenAI-compatible servers), OpenAI Responses, Google Gemini `generateContent`. The client
//! retries 408/429/5xx and connection failures with exponential back-off and jitter, honours
//! `Retry-After`, and bounds every call with a timeout.

mod client;
mod config;
mod error;
mod message;
mod usage_scan;
mod wire;

pub use client::LlmClient;
pub use config::{LlmConfig, Pricing, Provider};
pub use error::LlmError;
pub use message::{ChatRequest, ChatResponse, Role, Turn, Usage};
pub use usage_scan::{CallUsage, CallWire, UsageScanner};
