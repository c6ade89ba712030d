//! The decisions made around every tool call — Handoff's own MCP tools and the tool calls an
//! executor asks permission for — by one set of parts: layered permission rules
//! ([`permissions`]), the loop guard ([`loop_guard`]), Claude-Code-compatible external hooks
//! ([`hooks`]) and output truncation with spill-to-disk ([`output`]). The rules themselves
//! ([`PermissionRule`], [`PermissionAction`]) are domain data owned by `handoff-task` (they
//! travel with a task) and re-exported here; this crate only judges them.

pub mod hooks;
pub mod loop_guard;
pub mod mcp_name;
pub mod output;
pub mod permissions;

pub use permissions::{
    Grant, Layer, PartVerdict, PermissionAction, PermissionRequest, PermissionRule, RuleSource,
    RuleStack, Verdict,
};
