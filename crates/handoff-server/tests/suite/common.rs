//! A Handoff server on a free loopback port, and raw MCP-over-HTTP helpers.

use std::{collections::BTreeMap, time::Duration};

use handoff_config::{Config, LoadOptions};
use handoff_server::{App, serve_http};
use reqwest::{Client, Response, StatusCode, header::HeaderMap};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub struct TestServer {
    pub url: String,
    pub client: Client,
    shutdown: CancellationToken,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub async fn start(env: &[(&str, &str)]) -> TestServer {
    start_with_data(env, tempfile::tempdir().unwrap().keep()).await
}

/// A server keeping its state in `data` (a restart passes the previous server's).
pub async fn start_with_data(env: &[(&str, &str)], data: std::path::PathBuf) -> TestServer {
    // reqwest is built with rustls on the ring provider only; tests install it once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut vars: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    vars.insert("HANDOFF_PORT".into(), "0".into());
    vars.insert("HANDOFF_DATA_DIR".into(), data.display().to_string());
    let config = Config::load(LoadOptions {
        env: vars,
        ..LoadOptions::default()
    })
    .unwrap();
    let app = App::start(config).await.unwrap();
    let shutdown = CancellationToken::new();
    let handle = serve_http(&app, shutdown.clone()).await.unwrap();
    TestServer {
        url: format!("http://{}/mcp", handle.local_addr),
        client: Client::new(),
        shutdown,
    }
}

/// How long a wait on a fact may take before the test fails: a safety net, never what decides
/// a result (a loaded machine can be slow).
pub const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// Looks at `probe` until it yields `Ok`, with a short back-off between looks; after
/// `deadline` panics with `what` and the last observation (`Err`).
pub async fn wait_until<T, O: std::fmt::Debug>(
    what: &str,
    deadline: Duration,
    mut probe: impl AsyncFnMut() -> Result<T, O>,
) -> T {
    let give_up = std::time::Instant::now() + deadline;
    let mut pause = Duration::from_millis(10);
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                std::time::Instant::now() < give_up,
                "waited {deadline:?} for {what}; last seen: {seen:?}"
            ),
        }
        // The pause between two looks at a fact the server announces to no one.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The JSON-RPC message (from a JSON body or the SSE event carrying it).
    pub body: Value,
}

/// Reads a JSON body, or the last `data:` JSON event of an SSE body.
pub async fn read(response: Response) -> Reply {
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let is_sse = headers
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let body = if is_sse {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .next_back()
            .unwrap_or(Value::Null)
    } else if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"))
    };
    Reply {
        status,
        headers,
        body,
    }
}

impl TestServer {
    /// POSTs a body with MCP's Accept header and the given extra headers.
    pub async fn post(&self, headers: &[(&str, &str)], body: &Value) -> Reply {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        read(request.send().await.unwrap()).await
    }

    /// Opens a legacy session (initialize + initialized); returns its id.
    pub async fn initialize(&self, extra: &[(&str, &str)]) -> String {
        self.initialize_with(extra, json!({})).await
    }

    /// Opens a legacy session declaring `capabilities`; returns its id.
    pub async fn initialize_with(&self, extra: &[(&str, &str)], capabilities: Value) -> String {
        let reply = self.post(extra, &initialize_body(capabilities)).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        assert_eq!(reply.body["result"]["serverInfo"]["name"], "handoff");
        let session = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
        let mut headers = vec![
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-06-18"),
        ];
        headers.extend_from_slice(extra);
        let done = self
            .post(
                &headers,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(done.status, StatusCode::ACCEPTED);
        session
    }

    /// The Prometheus text of `GET /metrics`.
    pub async fn metrics(&self) -> String {
        let base = self.url.trim_end_matches("/mcp");
        let response = self.client.get(format!("{base}/metrics")).send().await;
        response.unwrap().text().await.unwrap()
    }

    /// DELETEs a legacy session.
    pub async fn delete_session(&self, session: &str) -> Reply {
        self.delete_session_as(session, &[]).await
    }

    /// DELETEs a legacy session with extra headers (the caller's identity).
    pub async fn delete_session_as(&self, session: &str, extra: &[(&str, &str)]) -> Reply {
        let mut request = self
            .client
            .delete(&self.url)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
        for (k, v) in extra {
            request = request.header(*k, *v);
        }
        read(request.send().await.unwrap()).await
    }

    /// Sends a request inside a legacy session.
    pub async fn session_call(&self, session: &str, extra: &[(&str, &str)], body: &Value) -> Reply {
        let mut headers = vec![
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-06-18"),
        ];
        headers.extend_from_slice(extra);
        self.post(&headers, body).await
    }

    /// Sends a 2026-07-28 stateless request with the headers and `_meta` it requires.
    pub async fn stateless(
        &self,
        id: u64,
        method: &str,
        name: Option<&str>,
        params: Value,
    ) -> Reply {
        self.stateless_with(id, method, name, params, &[], json!({}))
            .await
    }

    /// A 2026-07-28 stateless request with extra headers and the client's declared capabilities.
    pub async fn stateless_with(
        &self,
        id: u64,
        method: &str,
        name: Option<&str>,
        mut params: Value,
        extra: &[(&str, &str)],
        capabilities: Value,
    ) -> Reply {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"}
        });
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ];
        if let Some(name) = name {
            headers.push(("mcp-name", name));
        }
        headers.extend_from_slice(extra);
        self.post(
            &headers,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await
    }
}

/// A 2025-06-18 `initialize` body declaring `capabilities`.
pub fn initialize_body(capabilities: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": capabilities,
            "clientInfo": {"name": "handoff-tests", "version": "1"}
        }
    })
}

/// A `tools/call` body.
pub fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// Asserts a JSON-RPC error body and returns its code.
pub fn error_code(reply: &Reply) -> i64 {
    assert_eq!(
        reply.body["jsonrpc"], "2.0",
        "not JSON-RPC: {:?}",
        reply.body
    );
    reply.body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code: {:?}", reply.body))
}

/// The message of a JSON-RPC error body.
pub fn error_message(reply: &Reply) -> String {
    error_code(reply);
    reply.body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
