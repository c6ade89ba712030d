//! The `codex` executor: one long-lived `codex app-server` process per task, spoken to in
//! JSON-RPC 2.0 over stdin/stdout — a thread in the task directory, the prompt as its first
//! turn, follow-up messages folded into the running turn, command and patch approvals answered
//! by Handoff's policy, an interrupt before the process is stopped. Process handling (group,
//! signals, pause) is the `command` executor's, the JSON-RPC plumbing `agent_process`'s. With
//! homes configured, each run keeps Codex's state (`CODEX_HOME`: sessions, history, logs) in
//! a home of its own, seeded from the configured home and reused by its resumed runs.

mod control;
mod driver;
mod mapping;
mod protocol;
mod session;

use std::{path::PathBuf, sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::Value;

use crate::{
    AgentHomes, Capabilities, Executor, Run, RunSpec, RunnerError,
    agent_home::{self, Launcher},
    agent_process,
};

/// The executor's name.
pub const NAME: &str = "codex";

/// How long after an interrupt Codex gets to end its turn before it is signalled.
pub(crate) const INTERRUPT_GRACE: Duration = Duration::from_secs(1);

/// How the `codex` executor runs Codex.
#[derive(Debug, Clone)]
pub struct CodexConfig {
    /// The `codex` program.
    pub binary: String,
    /// Model for every thread; Codex's configured model when unset.
    pub model: Option<String>,
    /// `CODEX_HOME` for the processes; inherited when unset. With `homes`, a run's own home
    /// sets `CODEX_HOME` instead (seeded from this one).
    pub home: Option<PathBuf>,
    /// Provider retries before Codex gives up (applied to a provider defined in Codex's config;
    /// built-in providers keep Codex's own bound).
    pub max_retries: u32,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// How its processes are confined.
    pub isolation: Option<crate::Isolation>,
    /// Where each run keeps Codex's state, when not in one shared `CODEX_HOME`.
    pub homes: Option<AgentHomes>,
}

/// Runs tasks with Codex.
#[derive(Debug)]
pub struct CodexExecutor {
    launcher: Launcher,
    model: Option<String>,
    max_retries: u32,
}

impl CodexExecutor {
    /// An executor for `config`.
    pub fn new(config: CodexConfig) -> Result<Self, RunnerError> {
        // Codex's log lines on stderr become task output: plain text reads better there.
        let mut env = vec![("NO_COLOR".to_owned(), "1".to_owned())];
        if let Some(home) = &config.home {
            // The process runs in the task directory, where a relative home would point elsewhere.
            let home = std::path::absolute(home).map_err(|e| RunnerError::NotConfigured {
                executor: NAME.to_owned(),
                message: format!("CODEX_HOME {}: {e}", home.display()),
            })?;
            env.push(("CODEX_HOME".to_owned(), home.display().to_string()));
        }
        env.extend(config.env);
        let argv = vec![config.binary, "app-server".to_owned()];
        let launcher = Launcher {
            process: agent_process::launcher(argv, env, config.isolation)?,
            homes: config.homes,
        };
        // No run of this executor outlives the process that started it.
        launcher.clear_homes();
        Ok(Self {
            launcher,
            model: config.model,
            max_retries: config.max_retries,
        })
    }
}

#[async_trait]
impl Executor for CodexExecutor {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        agent_process::CAPABILITIES
    }

    fn unavailable(&self) -> Option<String> {
        self.launcher.process.unavailable_reason()
    }

    async fn start(&self, spec: RunSpec) -> Result<Run, RunnerError> {
        self.run(spec, None, None).await
    }

    /// A new app-server process resumes the thread Codex stored (`session_id` in `state`: the
    /// thread id its first run reported) and runs `prompt` as the next turn, in the run's home.
    async fn resume(&self, spec: RunSpec, state: &Value, prompt: &str) -> Result<Run, RunnerError> {
        let thread = agent_process::stored_session(
            state,
            "continuing the Codex thread",
            "the run reported no thread id",
        )?;
        let spec = RunSpec {
            prompt: prompt.to_owned(),
            ..spec
        };
        let home = agent_home::of_state(state);
        self.run(spec, Some(thread), home.as_deref()).await
    }

    async fn abandon(&self, state: &Value) -> Result<(), RunnerError> {
        agent_home::abandon(state).await
    }

    /// Nothing will continue the run: its home goes.
    async fn release(&self, state: &Value) -> Result<(), RunnerError> {
        agent_home::release(state);
        Ok(())
    }
}

impl CodexExecutor {
    /// One app-server process for `spec`: a new thread, or `resume_thread` continued in `home`.
    async fn run(
        &self,
        spec: RunSpec,
        resume_thread: Option<String>,
        home: Option<&std::path::Path>,
    ) -> Result<Run, RunnerError> {
        let continuable = spec.continuable;
        let settings = driver::Settings {
            prompt: spec.prompt.clone(),
            cwd: spec.workdir.to_string_lossy().into_owned(),
            model: self.model.clone(),
            max_retries: self.max_retries,
            resume_thread,
            gateway: spec
                .env
                .iter()
                .find(|(name, _)| name == "OPENAI_BASE_URL")
                .map(|(_, url)| url.clone()),
        };
        // The first line on stdin is the handshake; the prompt follows once a thread exists.
        let spec = RunSpec {
            prompt: protocol::initialize(),
            ..spec
        };
        let spawned = self.launcher.spawn(&spec, home).await?;
        let discard = agent_home::of_state(&spawned.state).filter(|_| !continuable);
        let shared = Arc::new(driver::Shared::new(spawned.control, "Codex"));
        let events = driver::start(shared.clone(), settings, spawned.events);
        let events = agent_home::discard_at_end(events, discard);
        Ok(agent_process::run(shared, events, spawned.state))
    }
}
