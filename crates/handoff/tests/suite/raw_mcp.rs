//! A raw 2026-07-28 MCP client (plain HTTP, no SDK) that declares the Tasks extension, for
//! driving `tasks/*` against the real binary.

use std::time::Duration;

use serde_json::{Value, json};

use super::wait::{Pace, wait_paced};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// One agent's stateless client.
pub struct Raw2026 {
    runtime: tokio::runtime::Runtime,
    http: reqwest::Client,
    url: String,
    agent: String,
}

impl Raw2026 {
    /// A client for `url` speaking as `agent`.
    pub fn new(url: &str, agent: &str) -> Self {
        // reqwest is built with rustls on the ring provider only.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            http: reqwest::Client::new(),
            url: url.to_owned(),
            agent: agent.to_owned(),
        }
    }

    /// Sends one request; returns the JSON-RPC response (from a JSON or an SSE body).
    pub fn request(&self, method: &str, name: Option<&str>, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "handoff-raw-2026", "version": "1"}
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("x-agent-id", &self.agent)
            .body(body.to_string());
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let text = self.runtime.block_on(async {
            let response = request.send().await.unwrap();
            response.text().await.unwrap()
        });
        let json = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .next_back()
            .or_else(|| serde_json::from_str(&text).ok());
        json.unwrap_or_else(|| panic!("not a JSON-RPC answer: {text}"))
    }

    /// `tools/call` of `execute_task`; returns the result (a task handle for this client).
    pub fn execute(&self, description: &str) -> Value {
        let reply = self.request(
            "tools/call",
            Some("execute_task"),
            json!({"name": "execute_task", "arguments": {"task_description": description}}),
        );
        assert!(reply["result"].is_object(), "{reply}");
        reply["result"].clone()
    }

    /// `tasks/get`: the whole JSON-RPC response.
    pub fn get(&self, task_id: &str) -> Value {
        self.request("tasks/get", Some(task_id), json!({"taskId": task_id}))
    }

    /// Polls `tasks/get` at the advertised interval until the status is one of `want`.
    pub fn poll(&self, task_id: &str, want: &[&str], limit: Duration) -> Value {
        let look = || {
            let reply = self.get(task_id);
            let result = reply["result"].clone();
            assert!(result.is_object(), "{reply}");
            if want.contains(&result["status"].as_str().unwrap_or_default()) {
                Ok(result)
            } else {
                Err(result)
            }
        };
        // The first answer says how often to ask again.
        let first = match look() {
            Ok(result) => return result,
            Err(result) => result,
        };
        let interval = first["pollIntervalMs"].as_u64().unwrap_or(1_000);
        // The wait's first look is that answer; it asks again an interval later.
        let mut first = Some(first);
        wait_paced(
            &format!("{task_id} to be {want:?}"),
            limit,
            Pace::every(Duration::from_millis(interval)),
            || first.take().map_or_else(look, Err),
        )
    }

    /// `tasks/update` with the given responses; returns the JSON-RPC response.
    pub fn update(&self, task_id: &str, responses: Value) -> Value {
        self.request(
            "tasks/update",
            Some(task_id),
            json!({"taskId": task_id, "inputResponses": responses}),
        )
    }

    /// `tasks/cancel`; returns the JSON-RPC response.
    pub fn cancel(&self, task_id: &str) -> Value {
        self.request("tasks/cancel", Some(task_id), json!({"taskId": task_id}))
    }
}
