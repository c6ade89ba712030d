//! Integration tests of the HTTP transport, in-process, with raw HTTP (one binary, see style).

// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
