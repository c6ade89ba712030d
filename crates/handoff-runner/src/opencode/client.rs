//! HTTP calls to an OpenCode server. Every call names the task's directory
//! (`x-opencode-directory`), so one server serves many task directories without mixing them.

use std::{path::Path, time::Duration};

use reqwest::{Client, Method, RequestBuilder, Response};
use serde_json::{Value, json};

use crate::{RunnerError, text::clip};

/// Per-call limit; the event stream has none.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a server listens and how to authenticate to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    /// HTTP Basic password (user `opencode`), when the server has one.
    pub password: Option<String>,
}

/// A client bound to one endpoint and one directory.
#[derive(Debug, Clone)]
pub(crate) struct OpenCodeClient {
    http: Client,
    endpoint: Endpoint,
    directory: String,
}

impl OpenCodeClient {
    /// A client for `directory` on `endpoint`.
    pub fn new(http: Client, endpoint: Endpoint, directory: &Path) -> Self {
        Self {
            http,
            endpoint,
            directory: directory.to_string_lossy().into_owned(),
        }
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let builder = self
            .http
            .request(method, format!("{}{path}", self.endpoint.url))
            .header("x-opencode-directory", &self.directory);
        match &self.endpoint.password {
            Some(password) => builder.basic_auth("opencode", Some(password)),
            None => builder,
        }
    }

    async fn send(
        &self,
        context: &'static str,
        builder: RequestBuilder,
    ) -> Result<Response, RunnerError> {
        let response = builder
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| io(context, e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        Err(RunnerError::Io {
            context,
            message: format!("OpenCode answered {status}: {}", clip(&body, 500)),
        })
    }

    async fn json(
        &self,
        context: &'static str,
        builder: RequestBuilder,
    ) -> Result<Value, RunnerError> {
        self.send(context, builder)
            .await?
            .json()
            .await
            .map_err(|e| io(context, e))
    }

    /// Creates a session with a permission ruleset; returns its id.
    pub async fn create_session(
        &self,
        title: &str,
        permission: Value,
    ) -> Result<String, RunnerError> {
        let body = json!({ "title": title, "permission": permission });
        let session = self
            .json(
                "creating the OpenCode session",
                self.request(Method::POST, "/session").json(&body),
            )
            .await?;
        session
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| RunnerError::Io {
                context: "creating the OpenCode session",
                message: format!("no session id in {}", clip(&session.to_string(), 500)),
            })
    }

    /// Sends a prompt without waiting for the turn; a busy session queues it into the next model
    /// call, which is how a follow-up message reaches a working agent.
    pub async fn prompt(
        &self,
        session: &str,
        text: &str,
        model: Option<&(String, String)>,
    ) -> Result<(), RunnerError> {
        let mut body = json!({ "parts": [{ "type": "text", "text": text }] });
        if let Some((provider, model)) = model {
            body["model"] = json!({ "providerID": provider, "modelID": model });
        }
        let path = format!("/session/{session}/prompt_async");
        self.send(
            "prompting OpenCode",
            self.request(Method::POST, &path).json(&body),
        )
        .await
        .map(drop)
    }

    /// Stops the session's current turn (and drops queued prompts).
    pub async fn abort(&self, session: &str) -> Result<(), RunnerError> {
        let path = format!("/session/{session}/abort");
        self.send(
            "aborting the OpenCode session",
            self.request(Method::POST, &path),
        )
        .await
        .map(drop)
    }

    /// Deletes the session.
    pub async fn delete_session(&self, session: &str) -> Result<(), RunnerError> {
        let path = format!("/session/{session}");
        self.send(
            "deleting the OpenCode session",
            self.request(Method::DELETE, &path),
        )
        .await
        .map(drop)
    }

    /// The status of busy sessions (idle ones are absent).
    pub async fn session_status(&self) -> Result<Value, RunnerError> {
        self.json(
            "reading OpenCode session status",
            self.request(Method::GET, "/session/status"),
        )
        .await
    }

    /// The session's messages, for the final answer and for re-syncing after a lost stream.
    pub async fn messages(&self, session: &str) -> Result<Value, RunnerError> {
        let path = format!("/session/{session}/message");
        self.json(
            "reading OpenCode messages",
            self.request(Method::GET, &path),
        )
        .await
    }

    /// Pending permission requests of this directory.
    pub async fn permissions(&self) -> Result<Value, RunnerError> {
        self.json(
            "listing OpenCode permission requests",
            self.request(Method::GET, "/permission"),
        )
        .await
    }

    /// Pending questions of this directory.
    pub async fn questions(&self) -> Result<Value, RunnerError> {
        self.json(
            "listing OpenCode questions",
            self.request(Method::GET, "/question"),
        )
        .await
    }

    /// Answers a permission request: `once`, `always` or `reject`.
    pub async fn reply_permission(
        &self,
        id: &str,
        reply: &str,
        message: Option<&str>,
    ) -> Result<(), RunnerError> {
        let mut body = json!({ "reply": reply });
        if let Some(message) = message {
            body["message"] = json!(message);
        }
        let path = format!("/permission/{id}/reply");
        self.send(
            "answering an OpenCode permission request",
            self.request(Method::POST, &path).json(&body),
        )
        .await
        .map(drop)
    }

    /// Answers a question: one list of chosen labels (or free text) per question.
    pub async fn reply_question(
        &self,
        id: &str,
        answers: Vec<Vec<String>>,
    ) -> Result<(), RunnerError> {
        let path = format!("/question/{id}/reply");
        self.send(
            "answering an OpenCode question",
            self.request(Method::POST, &path)
                .json(&json!({ "answers": answers })),
        )
        .await
        .map(drop)
    }

    /// Declines a question.
    pub async fn reject_question(&self, id: &str) -> Result<(), RunnerError> {
        let path = format!("/question/{id}/reject");
        self.send(
            "declining an OpenCode question",
            self.request(Method::POST, &path),
        )
        .await
        .map(drop)
    }

    /// Opens the directory's event stream.
    pub async fn events(&self) -> Result<Response, RunnerError> {
        self.request(Method::GET, "/event")
            .header("accept", "text/event-stream")
            .send()
            .await
            .map_err(|e| io("opening the OpenCode event stream", e))
            .and_then(|r| {
                if r.status().is_success() {
                    Ok(r)
                } else {
                    Err(RunnerError::Io {
                        context: "opening the OpenCode event stream",
                        message: format!("OpenCode answered {}", r.status()),
                    })
                }
            })
    }

    /// `GET /global/health` answered healthy.
    pub async fn healthy(&self) -> bool {
        let Ok(response) = self
            .request(Method::GET, "/global/health")
            .timeout(Duration::from_secs(2))
            .send()
            .await
        else {
            return false;
        };
        let Ok(body) = response.json::<Value>().await else {
            return false;
        };
        body.get("healthy").and_then(Value::as_bool) == Some(true)
    }
}

fn io(context: &'static str, error: reqwest::Error) -> RunnerError {
    RunnerError::Io {
        context,
        message: error.to_string(),
    }
}
