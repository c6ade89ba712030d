//! Test modules, one per API plus shared behaviour and the binary.

mod anthropic;
mod behaviour;
mod binary;
mod chat;
mod common;
mod embeddings;
mod gemini;
mod responses;
