//! One server for a whole corpus: a gateway token the cases call with, an operator token that
//! counts every agent's tasks, one legacy session, and HTTP with a deadline on every request.

use std::{net::SocketAddr, time::Duration};

use reqwest::Client;
use serde_json::{Value, json};

use super::super::common::{TestServer, start};

/// The token every case presents (a gateway: the `x-agent-id` header names the agent).
pub const GATEWAY: &str = "bad-input-gateway-token-0001";
/// A token that sees every agent's tasks, for counting them.
pub const OPERATOR: &str = "bad-input-operator-token-0002";
/// The agent the cases call as.
pub const AGENT: &str = "bad-input-agent";
/// A request that has not answered in this long counts as a hang.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// The legacy protocol version (sessions).
pub const LEGACY: &str = "2025-06-18";
/// The stateless protocol version.
pub const STATELESS: &str = "2026-07-28";

/// The `_meta` a 2026-07-28 request carries, as raw JSON.
pub const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bad-input","version":"1"}}"#;

/// What came back, as text: the corpus judges bytes, not just parsed JSON.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The body as (lossy) text.
    pub text: String,
    /// The JSON-RPC message: a JSON body or the last JSON `data:` event of an SSE body.
    pub message: Option<Value>,
}

impl Answer {
    /// Builds an answer from a status, a content type and the body bytes.
    pub fn new(status: u16, content_type: &str, body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(body).into_owned();
        let message = if content_type.starts_with("text/event-stream") {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .next_back()
        } else {
            serde_json::from_str(&text).ok()
        };
        Self {
            status,
            text,
            message,
        }
    }
}

/// The server the corpus runs against.
pub struct Fixture {
    /// The running server, held so it serves until the fixture drops.
    _server: TestServer,
    /// Its address.
    pub addr: SocketAddr,
    /// `http://addr/mcp`.
    pub url: String,
    /// HTTP with a per-request deadline, so a hang is a failure, not a stuck test.
    pub client: Client,
    /// The legacy session the legacy-era cases share.
    pub session: String,
}

/// The server's environment: tokens, a harmless executor (a refusal that fails open runs
/// `true`, and the task count shows it), and no submission rate to hide validation behind.
fn env() -> Vec<(&'static str, String)> {
    let tokens = json!([
        {"token": GATEWAY, "role": "gateway"},
        {"token": OPERATOR, "role": "operator"},
    ]);
    vec![
        ("HANDOFF_AUTH_TOKENS", tokens.to_string()),
        ("HANDOFF_DEFAULT_EXECUTOR", "command".into()),
        ("HANDOFF_COMMAND_ARGV", r#"["true"]"#.into()),
        // `true` needs no confinement, and the count check must not depend on the launcher.
        ("HANDOFF_ISOLATION", "none".into()),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0".into()),
        // The shared legacy session waits unused while the stateless corpus runs, which a
        // loaded machine stretches past the 30 s after which an unused session ends.
        ("HANDOFF_UNUSED_SESSION_TIMEOUT_SECS", "3600".into()),
    ]
}

impl Fixture {
    /// Starts a server and opens the shared legacy session.
    pub async fn start() -> Self {
        let env = env();
        let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let server = start(&pairs).await;
        let url = server.url.clone();
        let addr: SocketAddr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap();
        let client = Client::builder().timeout(DEADLINE).build().unwrap();
        let auth = format!("Bearer {GATEWAY}");
        let session = server
            .initialize(&[("authorization", &auth), ("x-agent-id", AGENT)])
            .await;
        Self {
            _server: server,
            addr,
            url,
            client,
            session,
        }
    }

    /// POSTs `body` with `headers`; a transport failure or timeout is an `Err` naming it.
    pub async fn post(
        &self,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<Answer, String> {
        let mut request = self.client.post(&self.url).body(body);
        for (k, v) in headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let response = request.send().await.map_err(|e| describe(&e))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = response.bytes().await.map_err(|e| describe(&e))?;
        Ok(Answer::new(status, &content_type, &bytes))
    }

    /// The headers of a well-formed request in `era` (`tool` names a tools/call's tool).
    pub fn headers(
        &self,
        era: Era,
        method: Option<&str>,
        tool: Option<&str>,
    ) -> Vec<(String, String)> {
        let mut headers = vec![
            ("content-type".into(), "application/json".into()),
            (
                "accept".into(),
                "application/json, text/event-stream".into(),
            ),
            ("authorization".into(), format!("Bearer {GATEWAY}")),
            ("x-agent-id".into(), AGENT.into()),
        ];
        match era {
            Era::Legacy => {
                headers.push(("mcp-session-id".into(), self.session.clone()));
                headers.push(("mcp-protocol-version".into(), LEGACY.into()));
            }
            Era::Stateless => {
                headers.push(("mcp-protocol-version".into(), STATELESS.into()));
                if let Some(method) = method {
                    headers.push(("mcp-method".into(), method.into()));
                }
                if let Some(tool) = tool {
                    headers.push(("mcp-name".into(), tool.into()));
                }
            }
        }
        headers
    }

    /// A stateless tools/call with `token`; the parsed reply.
    pub async fn call(&self, token: &str, tool: &str, arguments: Value) -> Result<Value, String> {
        let mut headers = self.headers(Era::Stateless, Some("tools/call"), Some(tool));
        headers.retain(|(k, _)| k != "authorization" && k != "x-agent-id");
        headers.push(("authorization".into(), format!("Bearer {token}")));
        if token == GATEWAY {
            headers.push(("x-agent-id".into(), AGENT.into()));
        }
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{META}}}}}"#
        );
        let answer = self.post(&headers, body.into_bytes()).await?;
        answer
            .message
            .ok_or_else(|| format!("HTTP {}: {}", answer.status, excerpt(&answer.text)))
    }

    /// Whether the server still answers a ping, in both eras; `Err` says how it did not.
    pub async fn alive(&self) -> Result<(), String> {
        let reply = self.call(GATEWAY, "ping", json!({})).await?;
        if reply["result"]["structuredContent"]["ok"] != true {
            return Err(format!(
                "stateless ping failed: {}",
                excerpt(&reply.to_string())
            ));
        }
        Ok(())
    }

    /// Whether the shared legacy session still answers a ping.
    pub async fn session_alive(&self) -> Result<(), String> {
        let headers = self.headers(Era::Legacy, None, None);
        let body = r#"{"jsonrpc":"2.0","id":999999,"method":"tools/call","params":{"name":"ping","arguments":{}}}"#;
        let answer = self.post(&headers, body.as_bytes().to_vec()).await?;
        match answer.message {
            Some(reply) if reply["result"]["structuredContent"]["ok"] == true => Ok(()),
            _ => Err(format!("legacy ping failed: {}", excerpt(&answer.text))),
        }
    }

    /// Every agent's tasks, counted through the operator token (all pages).
    pub async fn task_count(&self) -> usize {
        let mut count = 0;
        let mut cursor: Option<String> = None;
        loop {
            let mut args = json!({"limit": 200});
            if let Some(cursor) = &cursor {
                args["cursor"] = json!(cursor);
            }
            let reply = self.call(OPERATOR, "list_tasks", args).await.unwrap();
            let page = &reply["result"]["structuredContent"];
            count += page["tasks"]
                .as_array()
                .unwrap_or_else(|| panic!("list_tasks failed: {reply}"))
                .len();
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return count,
            }
        }
    }
}

/// Which protocol era a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-06-18, inside the shared session.
    Legacy,
    /// 2026-07-28, stateless.
    Stateless,
}

impl Era {
    /// Both eras.
    pub const ALL: [Era; 2] = [Era::Legacy, Era::Stateless];

    /// A short name for case names.
    pub fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Stateless => "stateless",
        }
    }
}

/// The first 200 characters of `text`, for failure lists.
pub fn excerpt(text: &str) -> String {
    let cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        format!("{cut}… ({} bytes)", text.len())
    } else {
        cut
    }
}

fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        format!("no answer within {} s", DEADLINE.as_secs())
    } else {
        format!("transport error: {error}")
    }
}
