//! Integration tests: real HTTP requests against a running scripted model, with each API's
//! stream parsed the way its clients parse it (one test binary, see the house style).

// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
