//! HTTP headers a client sends to Handoff's MCP endpoint.

/// Names the calling agent when a tool's `agent_id` argument is absent.
pub const AGENT_ID_HEADER: &str = "x-agent-id";
