//! An MCP server a coding agent is given for its task sessions: a program it starts on stdio,
//! or a server it reaches over HTTP or SSE.

use serde::{Deserialize, Serialize};

/// One MCP server an ACP agent's sessions get.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcpMcpServer {
    /// Its name (the agent prefixes its tools with it).
    pub name: String,
    /// How the agent reaches it.
    pub transport: McpTransport,
}

/// How an agent reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum McpTransport {
    /// A program the agent starts and speaks to on stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it.
        env: Vec<(String, String)>,
    },
    /// A server reached over streamable HTTP (only agents that declare `mcpCapabilities.http`).
    Http {
        /// Its URL.
        url: String,
        /// Headers sent with each request.
        headers: Vec<(String, String)>,
    },
    /// A server reached over SSE (only agents that declare `mcpCapabilities.sse`).
    Sse {
        /// Its URL.
        url: String,
        /// Headers sent with each request.
        headers: Vec<(String, String)>,
    },
}
