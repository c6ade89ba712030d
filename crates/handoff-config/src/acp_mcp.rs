//! The MCP servers an ACP agent is given for its task sessions
//! (`executors.acp.<name>.mcp_servers`): a program it starts on stdio, or a server it reaches
//! over HTTP or SSE. Handoff passes them in `session/new` and `session/load`; the agent starts
//! or reaches them itself, inside its confinement.

use std::collections::BTreeMap;

use handoff_task::{AcpMcpServer, McpTransport};
use serde::Deserialize;
use serde_json::{Value, json};

/// One server as the file or the variable spells it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMcpServer {
    name: String,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// Checks `agent`'s servers; an error names the field (`executors.acp.<agent>.mcp_servers[i]…`).
pub(crate) fn servers(agent: &str, raw: Vec<RawMcpServer>) -> Result<Vec<AcpMcpServer>, String> {
    let mut servers: Vec<AcpMcpServer> = Vec::with_capacity(raw.len());
    for (i, server) in raw.into_iter().enumerate() {
        let at = format!("executors.acp.{agent}.mcp_servers[{i}]");
        let named = !server.name.is_empty()
            && server
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !named {
            return Err(format!(
                "{at}.name: use letters, digits, - and _ (the agent prefixes tools with it)"
            ));
        }
        if servers.iter().any(|s| s.name == server.name) {
            return Err(format!("{at}.name: `{}` is named twice", server.name));
        }
        let transport = transport(&at, server.kind.as_deref().unwrap_or("stdio"), &server)?;
        servers.push(AcpMcpServer {
            name: server.name,
            transport,
        });
    }
    Ok(servers)
}

fn transport(at: &str, kind: &str, server: &RawMcpServer) -> Result<McpTransport, String> {
    match kind {
        "stdio" => {
            if server.url.is_some() || !server.headers.is_empty() {
                return Err(format!(
                    "{at}: a stdio server takes command, args and env, not url or headers"
                ));
            }
            let command = server.command.clone().filter(|c| !c.trim().is_empty());
            let command = command.ok_or_else(|| format!("{at}.command: name the program"))?;
            Ok(McpTransport::Stdio {
                command,
                args: server.args.clone(),
                env: server.env.clone().into_iter().collect(),
            })
        }
        "http" | "sse" => {
            if server.command.is_some() || !server.args.is_empty() || !server.env.is_empty() {
                return Err(format!(
                    "{at}: a {kind} server takes url and headers, not command, args or env"
                ));
            }
            let url = server.url.clone().unwrap_or_default();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("{at}.url: an http:// or https:// URL is needed"));
            }
            let headers = server.headers.clone().into_iter().collect();
            Ok(if kind == "http" {
                McpTransport::Http { url, headers }
            } else {
                McpTransport::Sse { url, headers }
            })
        }
        _ => Err(format!("{at}.type: stdio, http or sse")),
    }
}

/// `server` as it is configured (`masked`: every env and header value hidden, as they hold
/// keys).
pub(crate) fn to_json(server: &AcpMcpServer, masked: bool) -> Value {
    let pairs = |pairs: &[(String, String)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| {
                let v = if masked { crate::MASK } else { v.as_str() };
                (k.clone(), v.to_owned())
            })
            .collect()
    };
    let name = &server.name;
    match &server.transport {
        McpTransport::Stdio { command, args, env } => json!({
            "name": name, "command": command, "args": args, "env": pairs(env),
        }),
        McpTransport::Http { url, headers } => json!({
            "name": name, "type": "http", "url": url, "headers": pairs(headers),
        }),
        McpTransport::Sse { url, headers } => json!({
            "name": name, "type": "sse", "url": url, "headers": pairs(headers),
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<AcpMcpServer>, String> {
        servers("a", serde_json::from_str(text).unwrap())
    }

    #[test]
    fn stdio_http_and_sse_servers_are_read_and_shown_masked() {
        let servers = parse(
            r#"[{"name": "notes", "command": "notes-mcp", "args": ["--stdio"], "env": {"KEY": "k1"}},
                {"name": "docs", "type": "http", "url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer t"}},
                {"name": "old", "type": "sse", "url": "http://127.0.0.1:9/sse"}]"#,
        )
        .unwrap();
        assert_eq!(
            servers[0].transport,
            McpTransport::Stdio {
                command: "notes-mcp".to_owned(),
                args: vec!["--stdio".to_owned()],
                env: vec![("KEY".to_owned(), "k1".to_owned())],
            }
        );
        assert!(matches!(servers[1].transport, McpTransport::Http { .. }));
        assert!(matches!(servers[2].transport, McpTransport::Sse { .. }));
        assert_eq!(to_json(&servers[0], true)["env"]["KEY"], crate::MASK);
        assert_eq!(to_json(&servers[0], false)["env"]["KEY"], "k1");
        assert_eq!(
            to_json(&servers[1], true)["headers"]["Authorization"],
            crate::MASK
        );
        assert_eq!(to_json(&servers[1], true)["type"], "http");
    }

    #[test]
    fn a_bad_server_is_refused_naming_its_field() {
        for (text, words) in [
            (r#"[{"name": "", "command": "x"}]"#, "mcp_servers[0].name"),
            (
                r#"[{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]"#,
                "mcp_servers[1].name: `a` is named twice",
            ),
            (r#"[{"name": "a"}]"#, "mcp_servers[0].command"),
            (r#"[{"name": "a", "type": "http"}]"#, "mcp_servers[0].url"),
            (
                r#"[{"name": "a", "type": "http", "url": "file:///etc/passwd"}]"#,
                "mcp_servers[0].url",
            ),
            (
                r#"[{"name": "a", "type": "http", "url": "https://x", "command": "y"}]"#,
                "not command",
            ),
            (
                r#"[{"name": "a", "command": "x", "url": "https://x"}]"#,
                "not url",
            ),
            (
                r#"[{"name": "a", "type": "ws", "url": "https://x"}]"#,
                ".type",
            ),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(words), "{text}: {error}");
            assert!(error.starts_with("executors.acp.a.mcp_servers["), "{error}");
        }
    }
}
