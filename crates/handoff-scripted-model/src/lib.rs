//! A scripted fake LLM provider for tests. It speaks the real wire formats of OpenAI Chat
//! Completions, the OpenAI Responses API, Anthropic Messages and Gemini, so unmodified coding
//! agents (OpenCode, Claude Code, Codex) run against it deterministically and offline. It also
//! answers OpenAI embeddings with deterministic vectors (for Letta's archival memory).
//!
//! Replies come from a [`Script`] and are chosen statelessly from each request alone: the
//! scenario whose `match` text occurs in the last real user message supplies the turn whose
//! index is the number of assistant turns since that message. Every request is recorded as a
//! [`LoggedRequest`] (in memory and, optionally, as JSON lines in a file).

mod capture;
mod cwd;
mod embeddings;
mod error;
mod log;
mod model;
mod reply;
mod script;
mod select;
mod server;
mod shutdown;
mod sse;
mod wire;

pub use error::ModelError;
pub use log::{Api, LoggedRequest};
pub use model::ScriptedModel;
pub use script::{ErrorReply, Scenario, Script, ToolCall, Turn};
