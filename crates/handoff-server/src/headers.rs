//! The header names the MCP transport reads, as constants: a lookup by `HeaderName` hashes the
//! name, a lookup by `&str` first parses and validates it, on every request.

use http::HeaderName;

/// `Mcp-Session-Id`: the legacy era's session.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`: the revision a request speaks.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`: a 2026-07-28 request's method, mirrored from its body.
pub(crate) const METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`: a 2026-07-28 tool call's tool, mirrored from its body.
pub(crate) const NAME: HeaderName = HeaderName::from_static("mcp-name");
/// `X-Agent-Id`: the agent a gateway speaks for.
pub(crate) const AGENT_ID: HeaderName = HeaderName::from_static("x-agent-id");
