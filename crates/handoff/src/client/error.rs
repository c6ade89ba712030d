//! Why a client command could not do what was asked, each with the fix in its words.

use handoff_protocol::{ToolErrorBody, names};

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
            text: in_cli_words(&text),
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

/// The MCP tools a tool's text may name, and the client command that does the same.
const COMMANDS: [(&str, &str); 8] = [
    (names::EXECUTE_TASK, "handoff run"),
    (names::LIST_TASKS, "handoff tasks"),
    (names::GET_TASK_STATUS, "handoff show"),
    (names::SEND_TASK_MESSAGE, "handoff message"),
    (names::SEND_TASK_CONTROL, "handoff cancel|pause|resume"),
    (names::GET_TASK_FILES, "handoff files"),
    (names::READ_TASK_FILE, "handoff files ID PATH"),
    (names::GET_TASK_HISTORY, "handoff logs"),
];

/// A tool's text as a command-line user reads it: the tools it names become the commands
/// that do the same (the text was written for a model calling tools).
fn in_cli_words(text: &str) -> String {
    let mut out = text.to_owned();
    for (tool, command) in COMMANDS {
        out = replace_word(&out, &format!("`{tool}`"), &format!("`{command}`"));
        out = replace_word(&out, tool, &format!("`{command}`"));
    }
    out
}

/// `text` with every whole-word `word` replaced (neighbours that could continue an identifier
/// or a quoted name keep a match from counting).
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let joins = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '`');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().last().or_else(|| out.chars().last());
        let after = rest[at + word.len()..].chars().next();
        out.push_str(&rest[..at]);
        let bare = !word.starts_with('`');
        if bare && (joins(before) || joins(after)) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::in_cli_words;

    #[test]
    fn tool_names_become_the_commands_that_do_the_same() {
        let text = "Error INVALID_ARGUMENTS: invalid arguments for tool `execute_task`: /timeout_ms: \
                    0 is less than the minimum of 1.\nFix: correct /timeout_ms and call \
                    execute_task again; list_tasks shows your tasks.";
        assert_eq!(
            in_cli_words(text),
            "Error INVALID_ARGUMENTS: invalid arguments for tool `handoff run`: /timeout_ms: 0 is \
             less than the minimum of 1.\nFix: correct /timeout_ms and call `handoff run` again; \
             `handoff tasks` shows your tasks."
        );
    }

    #[test]
    fn the_history_tool_becomes_the_logs_command() {
        assert_eq!(
            in_cli_words("read get_task_history for the events"),
            "read `handoff logs` for the events"
        );
    }

    #[test]
    fn words_that_only_contain_a_tool_name_stay() {
        let text = "my_list_tasks_helper and list_tasks2 stay; get_task_status, once.";
        assert_eq!(
            in_cli_words(text),
            "my_list_tasks_helper and list_tasks2 stay; `handoff show`, once."
        );
    }
}
