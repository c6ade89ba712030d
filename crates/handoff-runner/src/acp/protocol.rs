//! The JSON-RPC lines Handoff writes to an ACP agent (Agent Client Protocol v1), and the ids
//! it names its requests by so the answers can be told apart.

use handoff_task::{AcpMcpServer, McpTransport};
use serde_json::{Value, json};

use crate::agent_process::{
    self,
    jsonrpc::{self, request, response},
};

/// The protocol version Handoff speaks; an agent answering another one is refused.
pub(crate) const PROTOCOL_VERSION: u64 = 1;

/// Id of the `initialize` request.
pub(crate) const INITIALIZE: &str = "handoff-initialize";
/// Id of the `session/new` or `session/load` request.
pub(crate) const SESSION: &str = "handoff-session";
/// Id of a pooled agent's warm-up `session/new`, whose session no task uses.
pub(crate) const WARM_UP: &str = "handoff-warm-up";
/// Prefix of a `session/prompt` request's id; the turn's number follows.
pub(crate) const PROMPT_PREFIX: &str = "handoff-prompt:";

/// `initialize`, the first line the agent reads. Handoff serves neither `fs/*` nor
/// `terminal/*`, so it advertises neither: the agent uses its own tools, inside its confinement.
pub(crate) fn initialize() -> String {
    request(
        INITIALIZE,
        "initialize",
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {
                "fs": { "readTextFile": false, "writeTextFile": false },
                "terminal": false
            },
            "clientInfo": { "name": "handoff", "title": "Handoff",
                "version": env!("CARGO_PKG_VERSION") }
        }),
    )
}

/// `session/new` in the task directory, with `servers` (ACP's form, [`mcp_servers`]).
pub(crate) fn session_new(cwd: &str, servers: &[Value]) -> String {
    request(
        SESSION,
        "session/new",
        json!({ "cwd": cwd, "mcpServers": servers }),
    )
}

/// The warm-up `session/new` of a pooled agent, in a scratch directory: an agent's first
/// session sets up state its later ones reuse.
pub(crate) fn warm_up_session(cwd: &str) -> String {
    request(
        WARM_UP,
        "session/new",
        json!({ "cwd": cwd, "mcpServers": [] }),
    )
}

/// `session/load` of a session the agent stored earlier (it replays the history first), with
/// `servers` as its new session had them.
pub(crate) fn session_load(session: &str, cwd: &str, servers: &[Value]) -> String {
    request(
        SESSION,
        "session/load",
        json!({ "sessionId": session, "cwd": cwd, "mcpServers": servers }),
    )
}

/// `configured` in ACP's form (`McpServer`: stdio servers untyped, env and headers as
/// name/value lists), keeping those the agent can reach by its `initialize` answer `init`
/// (stdio always; HTTP and SSE only where `mcpCapabilities` says so); the names of the others.
pub(crate) fn mcp_servers(configured: &[AcpMcpServer], init: &Value) -> (Vec<Value>, Vec<String>) {
    let can = |transport: &str| {
        init.pointer(&format!("/agentCapabilities/mcpCapabilities/{transport}"))
            == Some(&json!(true))
    };
    let pairs = |pairs: &[(String, String)]| -> Vec<Value> {
        pairs
            .iter()
            .map(|(name, value)| json!({ "name": name, "value": value }))
            .collect()
    };
    let (mut given, mut skipped) = (Vec::new(), Vec::new());
    for server in configured {
        let name = &server.name;
        match &server.transport {
            McpTransport::Stdio { command, args, env } => given
                .push(json!({ "name": name, "command": command, "args": args, "env": pairs(env) })),
            McpTransport::Http { url, headers } if can("http") => given.push(
                json!({ "type": "http", "name": name, "url": url, "headers": pairs(headers) }),
            ),
            McpTransport::Sse { url, headers } if can("sse") => given.push(
                json!({ "type": "sse", "name": name, "url": url, "headers": pairs(headers) }),
            ),
            McpTransport::Http { .. } | McpTransport::Sse { .. } => skipped.push(name.clone()),
        }
    }
    (given, skipped)
}

/// `session/prompt` number `turn` with `texts` as text blocks.
pub(crate) fn prompt(session: &str, turn: u64, texts: &[String]) -> String {
    let blocks = agent_process::text_blocks(texts);
    request(
        &format!("{PROMPT_PREFIX}{turn}"),
        "session/prompt",
        json!({ "sessionId": session, "prompt": blocks }),
    )
}

/// The `session/cancel` notification: the agent stops and answers the prompt `cancelled`.
pub(crate) fn cancel(session: &str) -> String {
    jsonrpc::notification("session/cancel", Some(json!({ "sessionId": session })))
}

/// A permission answer choosing `option`.
pub(crate) fn selected(id: &Value, option: &str) -> String {
    response(
        id,
        json!({ "outcome": { "outcome": "selected", "optionId": option } }),
    )
}

/// A permission answer withdrawing the request (the prompt turn was cancelled).
pub(crate) fn cancelled(id: &Value) -> String {
    response(id, json!({ "outcome": { "outcome": "cancelled" } }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_offers_no_client_capabilities() {
        let line: Value = serde_json::from_str(&initialize()).unwrap();
        assert_eq!(line["params"]["protocolVersion"], 1);
        assert_eq!(
            line["params"]["clientCapabilities"]["fs"]["writeTextFile"],
            false
        );
        assert_eq!(line["params"]["clientCapabilities"]["terminal"], false);
    }

    #[test]
    fn a_prompt_names_its_turn_and_carries_text_blocks() {
        let line: Value =
            serde_json::from_str(&prompt("s1", 2, &["a".to_owned(), "b".to_owned()])).unwrap();
        assert_eq!(line["id"], "handoff-prompt:2");
        assert_eq!(line["params"]["sessionId"], "s1");
        assert_eq!(
            line["params"]["prompt"][1],
            json!({"type": "text", "text": "b"})
        );
        let answer: Value = serde_json::from_str(&selected(&json!(7), "once")).unwrap();
        assert_eq!(answer["result"]["outcome"]["optionId"], "once");
    }

    #[test]
    fn sessions_get_the_mcp_servers_the_agent_can_reach_in_acps_form() {
        let configured = [
            AcpMcpServer {
                name: "notes".to_owned(),
                transport: McpTransport::Stdio {
                    command: "notes-mcp".to_owned(),
                    args: vec!["--stdio".to_owned()],
                    env: vec![("KEY".to_owned(), "k1".to_owned())],
                },
            },
            AcpMcpServer {
                name: "docs".to_owned(),
                transport: McpTransport::Http {
                    url: "https://docs.example/mcp".to_owned(),
                    headers: vec![("Authorization".to_owned(), "Bearer t".to_owned())],
                },
            },
            AcpMcpServer {
                name: "old".to_owned(),
                transport: McpTransport::Sse {
                    url: "https://old.example/sse".to_owned(),
                    headers: Vec::new(),
                },
            },
        ];
        let http_only = json!({"agentCapabilities": {"mcpCapabilities": {"http": true}}});
        let (given, skipped) = mcp_servers(&configured, &http_only);
        assert_eq!(
            given,
            [
                json!({"name": "notes", "command": "notes-mcp", "args": ["--stdio"],
                    "env": [{"name": "KEY", "value": "k1"}]}),
                json!({"type": "http", "name": "docs", "url": "https://docs.example/mcp",
                    "headers": [{"name": "Authorization", "value": "Bearer t"}]}),
            ]
        );
        assert_eq!(skipped, ["old"]);
        let (given, skipped) = mcp_servers(&configured, &json!({}));
        assert_eq!(given.len(), 1, "stdio only without declared capabilities");
        assert_eq!(skipped, ["docs", "old"]);
        let new: Value = serde_json::from_str(&session_new("/w", &given)).unwrap();
        assert_eq!(new["params"]["mcpServers"][0]["name"], "notes");
        let load: Value = serde_json::from_str(&session_load("s1", "/w", &given)).unwrap();
        assert_eq!(load["params"]["mcpServers"], new["params"]["mcpServers"]);
    }
}
