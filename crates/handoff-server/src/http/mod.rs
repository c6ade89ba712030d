//! Plain HTTP endpoints beside MCP.

mod health;

pub(crate) use health::{health, ready};
