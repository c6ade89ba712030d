//! Engine tests against a real SQLite file and the real `command` executor (`sh -c` scripts).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod engine;
