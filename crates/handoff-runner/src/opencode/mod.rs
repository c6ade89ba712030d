//! The `opencode` executor: each task is a session on an OpenCode server (one Handoff starts
//! and supervises, or one it attaches to), working in the task's own directory.

mod cli;
mod client;
mod control;
mod mapping;
mod server;
mod session;

use std::{path::PathBuf, sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{Value, json};

pub use self::cli::{CLI_NAME, OpenCodeCliConfig, OpenCodeCliExecutor};
use self::{
    client::{Endpoint, OpenCodeClient},
    control::OpenCodeControl,
    server::{Server, ServerMode},
    session::SessionSettings,
};

use crate::{Capabilities, Executor, Run, RunSpec, RunnerError, process};

/// The executor's name.
pub const NAME: &str = "opencode";

/// How the `opencode` executor reaches OpenCode and runs sessions.
#[derive(Debug, Clone)]
pub struct OpenCodeConfig {
    /// Start `opencode serve` (the program) or attach to a URL.
    pub server: OpenCodeServer,
    /// `provider/model` for every prompt.
    pub model: Option<String>,
    /// Provider retries tolerated before the task fails.
    pub retry_max_attempts: u32,
    /// Time spent retrying before the task fails.
    pub retry_max: Duration,
    /// Delete each session when its task ends.
    pub delete_sessions: bool,
    /// Permission rules in OpenCode's format (`[{permission, pattern, action}]`).
    pub ruleset: Value,
}

/// Which OpenCode server to use.
#[derive(Debug, Clone)]
pub enum OpenCodeServer {
    /// Start and supervise `opencode serve`.
    Managed {
        /// The `opencode` program.
        binary: String,
        /// Extra environment for it.
        env: Vec<(String, String)>,
        /// The inherited environment it starts from (an allow-listed copy of Handoff's, so the
        /// agent's shell never sees Handoff's secrets); `None`: all of Handoff's.
        inherit: Option<Vec<(String, String)>>,
        /// Its working directory.
        cwd: PathBuf,
        /// File recording its pid (under Handoff's data dir).
        state_file: PathBuf,
    },
    /// Attach to a running server.
    Attached {
        /// Its base URL.
        url: String,
        /// HTTP Basic password (user `opencode`).
        password: Option<String>,
    },
}

/// Runs tasks as OpenCode sessions.
pub struct OpenCodeExecutor {
    server: Arc<Server>,
    http: reqwest::Client,
    settings: Arc<SessionSettings>,
}

impl std::fmt::Debug for OpenCodeExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenCodeExecutor").finish_non_exhaustive()
    }
}

impl OpenCodeExecutor {
    /// An executor; a managed server starts on first use (or [`OpenCodeExecutor::warm_up`]).
    pub fn new(config: OpenCodeConfig) -> Result<Self, RunnerError> {
        // reqwest is built with rustls on ring only; installing the provider twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| RunnerError::NotConfigured {
                executor: NAME.to_owned(),
                message: format!("could not build an HTTP client: {e}"),
            })?;
        let mode = match config.server {
            OpenCodeServer::Managed {
                binary,
                env,
                inherit,
                cwd,
                state_file,
            } => ServerMode::Managed {
                binary,
                env,
                inherit,
                cwd,
                state_file,
            },
            OpenCodeServer::Attached { url, password } => ServerMode::Attached(Endpoint {
                url: url.trim_end_matches('/').to_owned(),
                password,
            }),
        };
        let model = match config.model.as_deref().map(|m| m.split_once('/')) {
            None => None,
            Some(Some((provider, model))) if !provider.is_empty() && !model.is_empty() => {
                Some((provider.to_owned(), model.to_owned()))
            }
            Some(_) => {
                return Err(RunnerError::NotConfigured {
                    executor: NAME.to_owned(),
                    message: "the model must be written provider/model".to_owned(),
                });
            }
        };
        Ok(Self {
            server: Arc::new(Server::new(mode, http.clone())),
            http,
            settings: Arc::new(SessionSettings {
                model,
                retry_max_attempts: config.retry_max_attempts,
                retry_max: config.retry_max,
                delete_sessions: config.delete_sessions,
                ruleset: config.ruleset,
            }),
        })
    }

    /// Starts the managed server now, so the first task does not wait for it; returns the
    /// server's URL.
    pub async fn warm_up(&self) -> Result<String, RunnerError> {
        self.server
            .endpoint()
            .await
            .map(|(endpoint, _)| endpoint.url)
    }

    /// Stops a managed server an earlier Handoff on this data dir was killed before stopping
    /// (no-op when attached); start-up calls it whichever executor tasks default to.
    pub async fn stop_leftover(&self) {
        self.server.stop_leftover().await;
    }

    /// Stops the managed server (no-op when attached).
    pub async fn shutdown(&self) {
        self.server.stop().await;
    }
}

impl OpenCodeExecutor {
    /// Prompts `turn`'s session (a new one, or one to continue) and follows it; the run's
    /// recorded state says where the session lives.
    async fn run(
        &self,
        spec: &RunSpec,
        turn: session::Turn<'_>,
        prompt: &str,
    ) -> Result<Run, RunnerError> {
        let (endpoint, process) = self.server.endpoint().await?;
        let client = OpenCodeClient::new(self.http.clone(), endpoint.clone(), &spec.workdir);
        let (shared, events) = session::begin(
            self.server.clone(),
            client,
            process,
            self.settings.clone(),
            turn,
            prompt,
            spec.continuable,
        )
        .await?;
        let state = json!({
            "session_id": shared.session,
            "url": endpoint.url,
            "directory": spec.workdir,
            "server_pgid": process.map(|p| p.pgid),
            "server_start_time": process.and_then(|p| p.start_time),
        });
        Ok(Run {
            events,
            control: Box::new(OpenCodeControl::new(shared)),
            state: Some(state),
        })
    }
}

#[async_trait]
impl Executor for OpenCodeExecutor {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            messages: true,
            pause: false,
            reattach: false,
        }
    }

    async fn start(&self, spec: RunSpec) -> Result<Run, RunnerError> {
        let ruleset = spec
            .preset_rules
            .as_ref()
            .and_then(|rules| serde_json::to_value(rules).ok());
        let title = spec.task_id.to_string();
        let turn = session::Turn::New {
            title: &title,
            ruleset,
        };
        self.run(&spec, turn, &spec.prompt).await
    }

    async fn resume(&self, spec: RunSpec, state: &Value, prompt: &str) -> Result<Run, RunnerError> {
        let session = state
            .get("session_id")
            .and_then(Value::as_str)
            .ok_or_else(|| RunnerError::Io {
                context: "continuing the OpenCode session",
                message: "the run recorded no session".to_owned(),
            })?;
        self.run(&spec, session::Turn::Continue { session }, prompt)
            .await
    }

    async fn release(&self, state: &Value) -> Result<(), RunnerError> {
        if !self.settings.delete_sessions {
            return Ok(());
        }
        let Some((session, directory)) = recorded_session(state) else {
            return Ok(());
        };
        let (endpoint, _) = self.server.endpoint().await?;
        let client =
            OpenCodeClient::new(self.http.clone(), endpoint, std::path::Path::new(directory));
        client.delete_session(session).await
    }

    async fn abandon(&self, state: &Value) -> Result<(), RunnerError> {
        let pgid = state
            .get("server_pgid")
            .and_then(Value::as_i64)
            .and_then(|p| i32::try_from(p).ok());
        let start_time = state.get("server_start_time").and_then(Value::as_u64);
        if let (Some(pgid), Some(start_time)) = (pgid, start_time) {
            // The server this run used belonged to a Handoff that died; nothing else uses it.
            return process::abandon_group(pgid, start_time).await;
        }
        // An attached server outlives us: stop just this run's session there.
        let Some((session, directory)) = recorded_session(state) else {
            return Ok(());
        };
        let (endpoint, _) = self.server.endpoint().await?;
        if state.get("url").and_then(Value::as_str) != Some(endpoint.url.as_str()) {
            return Ok(());
        }
        let client =
            OpenCodeClient::new(self.http.clone(), endpoint, std::path::Path::new(directory));
        client.abort(session).await
    }
}

/// The session and directory a run recorded in its state.
fn recorded_session(state: &Value) -> Option<(&str, &str)> {
    Some((
        state.get("session_id").and_then(Value::as_str)?,
        state.get("directory").and_then(Value::as_str)?,
    ))
}
