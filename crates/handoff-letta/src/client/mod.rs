//! A typed client for the Letta routes Handoff needs. Every call has its own timeout, is
//! retried with back-off on 408/429/5xx and connection failures (honouring `Retry-After`),
//! and waits its turn under the process-wide pressure limits.

mod pressure;
mod retry;
mod tool_wire;
mod tools;
mod wire;

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use handoff_config::LettaConfig;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use retry::Backoff;
pub use tool_wire::{AgentSecret, LettaAgent, LettaTool, McpServer, NewTool};
#[cfg(feature = "test-support")]
pub use wire::time_millis;
pub use wire::{Block, Health, NewBlock, NewMessage, Run};

use crate::{LettaError, error::Transient};
use pressure::Pressure;

/// The first retry waits up to this long; later ones double.
const FIRST_RETRY: Duration = Duration::from_millis(250);

/// A Letta client; cheap to clone (clones share the connection pool and the pressure limits).
#[derive(Debug, Clone)]
pub struct LettaClient {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    timeout: Duration,
    max_retries: u32,
    backoff: Backoff,
    pressure: Arc<Pressure>,
    stop: CancellationToken,
}

/// Whether a call may be repeated after a failure that leaves its outcome unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// Repeating it does no harm (reads, updates, attach, detach, delete).
    Idempotent,
    /// It creates something: one attempt only; the caller looks before trying again, so a
    /// request that landed without an answer is not made twice.
    Once,
}

/// How one answer is read.
enum Answer {
    Json(Value),
    Empty,
}

impl LettaClient {
    /// A client for the server in `config` (which must name one).
    pub fn new(config: &LettaConfig) -> Result<Self, LettaError> {
        let base = config
            .api_url
            .as_deref()
            .ok_or_else(|| LettaError::Config("letta.api_url is not set".to_owned()))?
            .trim_end_matches('/')
            .to_owned();
        // Installing twice is harmless: the first provider stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(config.request_timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| LettaError::Config(e.to_string()))?;
        Ok(Self {
            http,
            base,
            token: config.api_token.as_ref().map(|t| t.expose().to_owned()),
            timeout: config.request_timeout,
            max_retries: config.max_retries,
            backoff: Backoff {
                base: FIRST_RETRY,
                cap: retry::MAX_WAIT.min(Duration::from_secs(10)),
            },
            pressure: Arc::new(Pressure::new(
                config.max_concurrent_requests,
                config.requests_per_second,
            )),
            stop: CancellationToken::new(),
        })
    }

    /// Makes waits and retries end early (with [`LettaError::Stopped`]) once `stop` fires.
    pub fn stopping_with(mut self, stop: CancellationToken) -> Self {
        self.stop = stop;
        self
    }

    /// `GET /v1/health/`.
    pub async fn health(&self) -> Result<Health, LettaError> {
        self.read("health", "/v1/health/").await
    }

    /// Creates a block (not attached to anyone yet).
    pub async fn create_block(&self, block: &NewBlock) -> Result<Block, LettaError> {
        let body = serde_json::to_value(block).map_err(|e| LettaError::Decode {
            what: "create block",
            message: e.to_string(),
        })?;
        self.json(
            "create block",
            Method::POST,
            "/v1/blocks/",
            Some(body),
            Retry::Once,
        )
        .await
    }

    /// Blocks carrying `label` (Handoff's labels are unique per task, so at most one is ours).
    pub async fn blocks_labelled(&self, label: &str) -> Result<Vec<Block>, LettaError> {
        let path = format!("/v1/blocks/?label={label}&limit=50");
        self.read("list blocks", &path).await
    }

    /// One block by id (works after it was detached).
    pub async fn block(&self, block_id: &str) -> Result<Block, LettaError> {
        let path = format!("/v1/blocks/{block_id}");
        self.read("read block", &path).await
    }

    /// Replaces a block's value.
    pub async fn update_block(&self, block_id: &str, value: &str) -> Result<(), LettaError> {
        let path = format!("/v1/blocks/{block_id}");
        self.act(
            "update block",
            Method::PATCH,
            &path,
            Some(json!({ "value": value })),
        )
        .await
    }

    /// Attaches a block to an agent's core memory (attaching it again is harmless).
    pub async fn attach_block(&self, agent_id: &str, block_id: &str) -> Result<(), LettaError> {
        let path = format!("/v1/agents/{agent_id}/core-memory/blocks/attach/{block_id}");
        self.act("attach block", Method::PATCH, &path, None).await
    }

    /// Detaches a block from an agent's core memory.
    pub async fn detach_block(&self, agent_id: &str, block_id: &str) -> Result<(), LettaError> {
        let path = format!("/v1/agents/{agent_id}/core-memory/blocks/detach/{block_id}");
        self.act("detach block", Method::PATCH, &path, None).await
    }

    /// Deletes a block.
    pub async fn delete_block(&self, block_id: &str) -> Result<(), LettaError> {
        let path = format!("/v1/blocks/{block_id}");
        self.act("delete block", Method::DELETE, &path, None).await
    }

    /// The blocks attached to an agent's core memory.
    pub async fn agent_blocks(&self, agent_id: &str) -> Result<Vec<Block>, LettaError> {
        let path = format!("/v1/agents/{agent_id}/core-memory/blocks");
        self.read("list agent blocks", &path).await
    }

    /// Sends one message through the async endpoint (a background agent run).
    pub async fn send_message_async(
        &self,
        agent_id: &str,
        message: &NewMessage,
    ) -> Result<Run, LettaError> {
        let path = format!("/v1/agents/{agent_id}/messages/async");
        let body = json!({ "messages": [message] });
        self.json(
            "send message (async)",
            Method::POST,
            &path,
            Some(body),
            Retry::Once,
        )
        .await
    }

    /// Sends one message and waits for the agent's turn to finish.
    pub async fn send_message(
        &self,
        agent_id: &str,
        message: &NewMessage,
    ) -> Result<(), LettaError> {
        let path = format!("/v1/agents/{agent_id}/messages");
        let body = json!({ "messages": [message] });
        self.call("send message", Method::POST, &path, Some(body), Retry::Once)
            .await
            .map(drop)
    }

    /// The agent's latest `limit` messages, newest first, as Letta returns them.
    pub async fn recent_messages(
        &self,
        agent_id: &str,
        limit: u32,
    ) -> Result<Vec<Value>, LettaError> {
        let path = format!("/v1/agents/{agent_id}/messages?limit={limit}&order=desc");
        self.read("list messages", &path).await
    }

    /// The agent's runs still waiting or under way (`created` or `running`), newest first.
    pub async fn active_runs(&self, agent_id: &str) -> Result<Vec<Run>, LettaError> {
        let path = format!("/v1/runs/?agent_id={agent_id}&active=true&order=desc&limit=50");
        self.read("list active runs", &path).await
    }

    /// One run.
    pub async fn run(&self, run_id: &str) -> Result<Run, LettaError> {
        let path = format!("/v1/runs/{run_id}");
        self.read("read run", &path).await
    }

    /// A read.
    async fn read<T: DeserializeOwned>(
        &self,
        what: &'static str,
        path: &str,
    ) -> Result<T, LettaError> {
        self.json(what, Method::GET, path, None, Retry::Idempotent)
            .await
    }

    /// An idempotent call whose answer carries nothing Handoff needs.
    async fn act(
        &self,
        what: &'static str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(), LettaError> {
        self.call(what, method, path, body, Retry::Idempotent)
            .await
            .map(drop)
    }

    async fn json<T: DeserializeOwned>(
        &self,
        what: &'static str,
        method: Method,
        path: &str,
        body: Option<Value>,
        retry: Retry,
    ) -> Result<T, LettaError> {
        match self.call(what, method, path, body, retry).await? {
            Answer::Json(v) => serde_json::from_value(v).map_err(|e| LettaError::Decode {
                what,
                message: e.to_string(),
            }),
            Answer::Empty => Err(LettaError::Decode {
                what,
                message: "empty answer".to_owned(),
            }),
        }
    }

    /// One call with its retries.
    async fn call(
        &self,
        what: &'static str,
        method: Method,
        path: &str,
        body: Option<Value>,
        retry: Retry,
    ) -> Result<Answer, LettaError> {
        let url = format!("{}{path}", self.base);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let failure = match self.attempt(what, &method, &url, body.as_ref()).await {
                Ok(answer) => return Ok(answer),
                Err(Attempt::Final(e)) => return Err(e),
                Err(Attempt::Again(t)) => t,
            };
            if retry == Retry::Once || attempt > self.max_retries {
                return Err(LettaError::Exhausted {
                    what,
                    attempts: attempt,
                    last: failure.message,
                });
            }
            let wait = failure
                .retry_after
                .unwrap_or_else(|| self.backoff.wait(attempt));
            tracing::debug!(what, attempt, ?wait, failure = %failure.message, "retrying a Letta call");
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.stop.cancelled() => return Err(LettaError::Stopped { what }),
            }
        }
    }

    async fn attempt(
        &self,
        what: &'static str,
        method: &Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Answer, Attempt> {
        let _permit = tokio::select! {
            permit = self.pressure.admit() => permit,
            () = self.stop.cancelled() => None,
        }
        .ok_or(Attempt::Final(LettaError::Stopped { what }))?;
        let mut request = self.http.request(method.clone(), url).timeout(self.timeout);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let again = |message: String, retry_after| {
            Attempt::Again(Transient {
                message,
                retry_after,
            })
        };
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                again(format!("no answer within {:?}", self.timeout), None)
            } else {
                again(format!("connection failed: {e}"), None)
            }
        })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry::retry_after(v, SystemTime::now()));
        let text = response
            .text()
            .await
            .map_err(|e| again(format!("the answer was cut off: {e}"), None))?;
        match status {
            200..=299 if text.trim().is_empty() => Ok(Answer::Empty),
            200..=299 => serde_json::from_str(&text).map(Answer::Json).map_err(|e| {
                Attempt::Final(LettaError::Decode {
                    what,
                    message: format!("not JSON: {e}"),
                })
            }),
            404 => Err(Attempt::Final(LettaError::NotFound {
                what,
                detail: wire::detail(&text),
            })),
            409 => Err(Attempt::Final(LettaError::Conflict {
                what,
                detail: wire::detail(&text),
            })),
            408 | 429 | 500..=599 => Err(again(
                format!("HTTP {status}: {}", wire::detail(&text)),
                retry_after,
            )),
            _ => Err(Attempt::Final(LettaError::Refused {
                what,
                status,
                detail: wire::detail(&text),
            })),
        }
    }
}

/// How one attempt ended, when it did not succeed.
enum Attempt {
    Again(Transient),
    Final(LettaError),
}
