//! Why a client command could not do what was asked, each with the fix in its words.

use handoff_protocol::ToolErrorBody;

/// A failed client command (exit code 2): the server, the connection or the input.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing answered at the URL (refused, unresolvable, timed out).
    #[error(
        "cannot reach Handoff at {url} ({detail}): is `handoff serve` running there? set --url \
         or HANDOFF_URL"
    )]
    Unreachable {
        /// The endpoint tried.
        url: String,
        /// What the HTTP client said.
        detail: String,
    },
    /// The server wants a (valid) bearer token.
    #[error(
        "the server at {url} refused the request (401: {message}): set HANDOFF_TOKEN, or \
         `token` in {config}"
    )]
    Unauthorized {
        /// The endpoint.
        url: String,
        /// The server's words.
        message: String,
        /// Where the client config file is looked for.
        config: String,
    },
    /// Refused at the edge for another reason (agent mismatch, Host, Origin).
    #[error("the server refused the request ({status}: {message})")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The server's words.
        message: String,
    },
    /// A JSON-RPC error (an unknown tool, a bad request).
    #[error("the server answered error {code}: {message}")]
    Rpc {
        /// The JSON-RPC code.
        code: i64,
        /// The server's words.
        message: String,
    },
    /// The tool ran and failed: its own text says what went wrong and the fix.
    #[error("{text}{hint}")]
    Tool {
        /// The tool's `Error CODE: … Fix: …` text.
        text: String,
        /// The machine-readable body, when the server sent one.
        body: Option<Box<ToolErrorBody>>,
        /// What to do on this side, when the fix is the client's (empty otherwise).
        hint: String,
    },
    /// The answer was not what the protocol promises.
    #[error("unexpected answer from the server: {0}")]
    BadReply(String),
    /// The command line or the client config is wrong.
    #[error("{0}")]
    Usage(String),
}

impl ClientError {
    /// A tool's failure, with a client-side hint where the fix is ours to give.
    pub fn tool(text: String, body: Option<ToolErrorBody>) -> Self {
        let hint = match &body {
            Some(b) if b.pointer.as_deref() == Some("/agent_id") => {
                "\nHint: name the agent to act as with --agent NAME, HANDOFF_AGENT or `agent` in \
                 client.toml"
                    .to_owned()
            }
            _ => String::new(),
        };
        Self::Tool {
            text,
            body: body.map(Box::new),
            hint,
        }
    }

    /// The tool error's code, when this is one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Tool { body: Some(b), .. } => Some(&b.code),
            _ => None,
        }
    }
}
