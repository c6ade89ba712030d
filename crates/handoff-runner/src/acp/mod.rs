//! The `acp` executors: any coding agent that speaks the Agent Client Protocol (JSON-RPC 2.0
//! over stdio, v1) — `opencode acp`, the Claude Code and Codex adapters, Gemini CLI … — one
//! agent process per task, started through the isolation launcher. `initialize`, then
//! `session/new` in the task directory, then the prompt as the first `session/prompt`; updates
//! become task events, permission requests go through Handoff's policy, a message waits for the
//! running turn to end and becomes the next turn, a cancel is `session/cancel` and then the
//! process group (or cgroup). Pause freezes the task's cgroup. Process handling is the
//! `command` executor's, the JSON-RPC plumbing `agent_process`'s.

mod control;
mod driver;
mod mapping;
mod pool;
#[cfg(test)]
mod pool_tests;
mod probe;
mod protocol;
mod session;

use std::{sync::Arc, time::Duration};

pub use pool::{Claim, PoolSettings};
pub use probe::{AgentIdentity, probe};

use async_trait::async_trait;
use serde_json::Value;

use crate::{
    Capabilities, Executor, Run, RunSpec, RunnerError,
    agent_home::{self, AgentHomes, Launcher},
    agent_process,
};

/// How long after `session/cancel` the agent gets to end its turn before it is signalled.
pub(crate) const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// How long a run waits for the executor's first agent to reach a session before it starts
/// anyway.
const FIRST_START_WAIT: Duration = Duration::from_secs(60);

/// How one ACP executor runs its agent.
#[derive(Debug, Clone)]
pub struct AcpConfig {
    /// The name `execute_task {executor}` selects it by.
    pub name: String,
    /// The agent's program and arguments (`["opencode", "acp"]`).
    pub argv: Vec<String>,
    /// Extra environment for the agent.
    pub env: Vec<(String, String)>,
    /// How its processes are confined.
    pub isolation: Option<crate::Isolation>,
    /// Agents started ahead of tasks.
    pub pool: Option<PoolSettings>,
    /// A home of its own for each agent process's state (`None`: the agents share theirs).
    pub homes: Option<AgentHomes>,
    /// MCP servers given to each task session.
    pub mcp_servers: Vec<handoff_task::AcpMcpServer>,
}

/// Runs tasks with an ACP agent.
#[derive(Debug)]
pub struct AcpExecutor {
    name: String,
    launcher: Launcher,
    /// Whether an agent process of this executor has reached a session yet. Until one has, runs
    /// start one at a time: agents set up shared state on their first start (OpenCode creates
    /// its database), and concurrent first starts race (measured: "Failed query: CREATE TABLE").
    warmed: Arc<tokio::sync::Mutex<bool>>,
    /// Agents started ahead of tasks, when the executor keeps any.
    pool: Option<Arc<pool::Pool>>,
    /// Where pool directories are made (swept at start even when the pool is now empty).
    pool_root: Option<std::path::PathBuf>,
    /// MCP servers given to each task session.
    mcp_servers: Arc<[handoff_task::AcpMcpServer]>,
}

impl AcpExecutor {
    /// An executor for `config`; an empty argv is refused.
    pub fn new(config: AcpConfig) -> Result<Self, RunnerError> {
        if config.argv.is_empty() {
            return Err(RunnerError::NotConfigured {
                executor: config.name,
                message: "argv is empty; set the agent's program".to_owned(),
            });
        }
        let sandboxed = config
            .isolation
            .as_ref()
            .is_some_and(|i| i.config.level == handoff_isolation::IsolationLevel::Sandbox);
        let process = agent_process::launcher(config.argv, config.env, config.isolation)?;
        let warmed = Arc::new(tokio::sync::Mutex::new(false));
        let launcher = Launcher {
            process,
            homes: config.homes,
        };
        let pool_root = config.pool.as_ref().map(|p| p.root.clone());
        let pool = config.pool.filter(|p| p.size > 0).map(|settings| {
            Arc::new(pool::Pool::new(
                settings,
                config.name.clone(),
                launcher.clone(),
                sandboxed,
                Arc::clone(&warmed),
            ))
        });
        Ok(Self {
            name: config.name,
            launcher,
            warmed,
            pool,
            pool_root,
            mcp_servers: config.mcp_servers.into(),
        })
    }

    /// Starts the pool's agents (a no-op without a pool or where the executor cannot run);
    /// needs a Tokio runtime. Empty pool directories of earlier Handoff processes are removed,
    /// and the agents' homes they left (no run of theirs can continue). `env` is what its
    /// agents get to reach the model (the gateway's URL and a token for each).
    pub fn start_pool(&self, env: Option<Arc<dyn crate::AgentEnv>>) {
        if let (Some(pool), Some(env)) = (&self.pool, env) {
            pool.set_env(env);
        }
        self.launcher.clear_homes();
        if self.unavailable().is_some() {
            return;
        }
        if let Some(root) = &self.pool_root {
            pool::sweep(root);
        }
        if let Some(pool) = &self.pool {
            pool.fill();
        }
    }

    /// Stops the agents waiting in the pool.
    pub fn stop_pool(&self) {
        if let Some(pool) = &self.pool {
            pool.close();
        }
    }
}

/// The longest a task waits for an agent the pool is starting before it starts its own.
const POOL_PATIENCE: Duration = Duration::from_secs(60);

#[async_trait]
impl Executor for AcpExecutor {
    fn name(&self) -> &str {
        &self.name
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

    /// A waiting agent, or the one starting now once it is ready (within [`POOL_PATIENCE`]):
    /// it is ready sooner than one started for the task, and two starting at once slow each
    /// other (the first task after Handoff starts finds its agent still starting).
    async fn claim(&self) -> Option<Claim> {
        self.pool.as_ref()?.claim_waiting(POOL_PATIENCE).await
    }

    /// The claimed agent opens the task's session in its directory (`spec.workdir`); a claim
    /// for another directory is let go and a new agent started.
    async fn start_claimed(&self, spec: RunSpec, claim: Claim) -> Result<Run, RunnerError> {
        if claim.workdir() != spec.workdir {
            drop(claim);
            return self.run(spec, None, None).await;
        }
        let Some(parts) = claim.take() else {
            return self.run(spec, None, None).await;
        };
        let settings = driver::Settings {
            first: None,
            agent: self.name.clone(),
            prompt: spec.prompt.clone(),
            cwd: spec.workdir.to_string_lossy().into_owned(),
            load_session: None,
            mcp_servers: Arc::clone(&self.mcp_servers),
            initialized: Some(parts.init),
            discard_home: agent_home::of_state(&parts.state).filter(|_| !spec.continuable),
        };
        let (shared, events) = driver::Shared::new(parts.control);
        driver::start(shared.clone(), settings, parts.events, parts.preface);
        Ok(agent_process::run(shared, events, parts.state))
    }

    fn pool(&self) -> Option<(usize, usize)> {
        self.pool.as_ref().map(|p| p.counts())
    }

    /// A new agent process loads the session the first run reported (`session_id` in
    /// `state`) and runs `prompt` as its next turn.
    async fn resume(&self, spec: RunSpec, state: &Value, prompt: &str) -> Result<Run, RunnerError> {
        let session = agent_process::stored_session(
            state,
            "continuing the ACP session",
            "the run reported no session id",
        )?;
        let spec = RunSpec {
            prompt: prompt.to_owned(),
            ..spec
        };
        self.run(spec, Some(session), agent_home::of_state(state))
            .await
    }

    async fn abandon(&self, state: &Value) -> Result<(), RunnerError> {
        agent_home::abandon(state).await
    }

    /// Nothing will continue the run: its agent's home goes.
    async fn release(&self, state: &Value) -> Result<(), RunnerError> {
        agent_home::release(state);
        Ok(())
    }
}

impl AcpExecutor {
    /// One agent process for `spec`: a new session, or `load_session` continued.
    /// One agent process for `spec`: a new session, or `load_session` continued in `home` (the
    /// continued run's, when agents have homes).
    async fn run(
        &self,
        spec: RunSpec,
        load_session: Option<String>,
        home: Option<std::path::PathBuf>,
    ) -> Result<Run, RunnerError> {
        // A first start that hangs holds the others up for a bounded time only.
        let first = tokio::time::timeout(FIRST_START_WAIT, Arc::clone(&self.warmed).lock_owned())
            .await
            .ok()
            .filter(|warmed| !**warmed);
        let settings = driver::Settings {
            first,
            agent: self.name.clone(),
            prompt: spec.prompt.clone(),
            cwd: spec.workdir.to_string_lossy().into_owned(),
            load_session,
            mcp_servers: Arc::clone(&self.mcp_servers),
            initialized: None,
            discard_home: None,
        };
        let continuable = spec.continuable;
        // The first line on stdin is the handshake; the prompt follows once a session exists.
        let spec = RunSpec {
            prompt: protocol::initialize(),
            ..spec
        };
        let spawned = self.launcher.spawn(&spec, home.as_deref()).await?;
        let settings = driver::Settings {
            discard_home: agent_home::of_state(&spawned.state).filter(|_| !continuable),
            ..settings
        };
        let (shared, events) = driver::Shared::new(spawned.control);
        driver::start(shared.clone(), settings, spawned.events, Vec::new());
        Ok(agent_process::run(shared, events, spawned.state))
    }
}
