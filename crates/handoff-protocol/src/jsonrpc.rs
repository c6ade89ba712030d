//! JSON-RPC error codes Handoff's MCP endpoint answers with (protocol errors, as opposed to tool
//! results with `isError: true`).

/// The request body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The body is JSON but not a JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method (e.g. the Tasks API on a session without the extension's methods).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Bad parameters: an unknown tool, an unknown or foreign task handle.
pub const INVALID_PARAMS: i64 = -32602;
/// A failure inside Handoff.
pub const INTERNAL_ERROR: i64 = -32603;
/// Refused at the edge (authentication, origin, host…).
pub const SERVER_ERROR: i64 = -32000;
/// The MCP session is unknown or expired; start a new one.
pub const SESSION_NOT_FOUND: i64 = -32001;
/// The client lacks a capability the method needs (MCP Tasks without the extension).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
