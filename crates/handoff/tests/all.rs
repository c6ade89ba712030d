//! End-to-end tests of the real `handoff` binary, driven by real MCP clients.

// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
