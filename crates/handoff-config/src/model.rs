//! The resolved, validated configuration types.

use std::{path::PathBuf, time::Duration};

use handoff_isolation::{IsolationLevel, NetworkMode};

use handoff_policy::{
    hooks::HooksConfig,
    loop_guard::Ladder,
    output::{Cap, Limits},
};

use crate::{
    AcpExecutors, ByteSize, CompletionConfig, EffectiveSetting, EvaluatorConfig, PermissionPolicy,
    Secret, ToolOutputLimits,
};

/// Handoff's whole configuration, resolved from every layer.
#[derive(Debug, Clone)]
pub struct Config {
    /// HTTP/MCP server settings.
    pub server: ServerConfig,
    /// Logging.
    pub log: LogConfig,
    /// Where Handoff keeps its database and spilled outputs.
    pub data_dir: PathBuf,
    /// The PostgreSQL database of the task store (`postgres://…`); `None`: SQLite in `data_dir`.
    pub database_url: Option<crate::Secret>,
    /// Heartbeats and leases of this instance in the store.
    pub instance: InstanceConfig,
    /// Root of per-task working directories.
    pub workspace_dir: PathBuf,
    /// Task engine limits.
    pub tasks: TaskConfig,
    /// Per-task resource limits for runners.
    pub runner: RunnerConfig,
    /// Executor settings.
    pub executors: ExecutorsConfig,
    /// Letta integration (off when `api_url` is unset).
    pub letta: crate::LettaConfig,
    /// Matrix integration.
    pub matrix: crate::MatrixConfig,
    /// Feature switches kept from the older server.
    pub features: FeatureConfig,
    /// The tool pipeline: who may call which tool, loop guard, output caps.
    pub tools: ToolsConfig,
    /// External hooks around tool calls and tasks (Claude Code's format).
    pub hooks: HooksConfig,
    /// How tasks are verified before they are reported completed.
    pub completion: CompletionConfig,
    /// The judge / manager model.
    pub evaluator: EvaluatorConfig,
    /// The model provider tasks reach through Handoff's gateway.
    pub models: ModelsConfig,
    /// Every setting with its rendered value and the layer that set it.
    pub effective: Vec<EffectiveSetting>,
}

/// How this instance shows it is alive and keeps its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceConfig {
    /// Interval of heartbeats (each renews this instance's leases).
    pub heartbeat: Duration,
    /// A lease not renewed for this long has expired; its task may be taken over.
    pub lease_expiry: Duration,
    /// The most two instances' clocks may differ: a lease is taken over only this long after
    /// it ran out, by the taker's clock.
    pub clock_skew: Duration,
}

/// HTTP/MCP server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Bind address (an IP or a host name).
    pub host: String,
    /// TCP port; 0 picks a free one.
    pub port: u16,
    /// Accepted `Host` header names (with optional `:port`).
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values; `:*` matches any port.
    pub allowed_origins: Vec<String>,
    /// Exact origins that receive CORS headers.
    pub cors_origins: Vec<String>,
    /// Handoff's base URL as other services reach it (no trailing slash); `None` when unset.
    pub public_url: Option<String>,
    /// Bearer token required on `/mcp` when set; its holder is a gateway (it names the agent
    /// per call).
    pub auth_token: Option<Secret>,
    /// Bearer tokens and whom each stands for (`auth.tokens`).
    pub tokens: crate::TokenGrants,
    /// The agent a caller that names none acts as (clients that send no `x-agent-id`).
    pub default_agent: Option<handoff_task::AgentId>,
    /// Largest accepted request body.
    pub max_body_bytes: ByteSize,
    /// Idle legacy sessions are closed after this.
    pub session_idle_timeout: Duration,
    /// A legacy session that sent no request after `initialize` is closed after this.
    pub unused_session_timeout: Duration,
    /// Open legacy sessions at most, all callers together.
    pub max_sessions: u32,
    /// Open legacy sessions at most for one caller identity.
    pub max_sessions_per_client: u32,
    /// Grace period for in-flight requests at shutdown.
    pub shutdown_grace: Duration,
    /// A request line and its headers must arrive within this, counted from the connection's
    /// start or from the first byte of a later request on it.
    pub header_read_timeout: Duration,
    /// A request body must arrive in full within this once its headers are read.
    pub body_read_timeout: Duration,
    /// A keep-alive connection with no request in flight is closed after this.
    pub keep_alive_timeout: Duration,
    /// Open HTTP connections at most; beyond it new connections are refused (503).
    pub max_connections: u32,
}

/// Log verbosity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// The default.
    Info,
    /// Verbose (the older server's `DEBUG=true`).
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// The level's name as tracing filters spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Text on a terminal, JSON otherwise.
    Auto,
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// The format's name as the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Auto => "auto",
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// Logging settings.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Verbosity.
    pub level: LogLevel,
    /// Line format.
    pub format: LogFormat,
}

/// Task engine limits.
#[derive(Debug, Clone)]
pub struct TaskConfig {
    /// Tasks running at once, all agents.
    pub max_concurrent: u32,
    /// Tasks running at once for one agent.
    pub max_concurrent_per_agent: u32,
    /// Queued tasks before submissions are refused.
    pub max_queued: u32,
    /// Deadline for a task that gives none.
    pub default_timeout: Duration,
    /// How long a `sync=true` call waits before answering `running`.
    pub sync_wait: Duration,
    /// How often MCP Tasks clients are asked to poll a task handle.
    pub poll_interval: Duration,
    /// Largest accepted task description.
    pub max_description_bytes: ByteSize,
    /// Executor used when a submission names none.
    pub default_executor: String,
    /// How long an idempotency key keeps returning the same task.
    pub idempotency_window: Duration,
    /// Finished tasks are purged after this.
    pub retention: Duration,
    /// Per-agent submissions per minute (`None`: unlimited).
    pub submissions_per_minute: Option<u32>,
    /// Submissions one agent may make at once before the rate applies.
    pub submission_burst: u32,
    /// Time between SIGTERM and SIGKILL when stopping an executor.
    pub cancel_grace: Duration,
    /// On shutdown, how long running tasks may still finish on their own (nothing new is
    /// claimed) before they are stopped.
    pub drain: Duration,
    /// Whether a task that does not say re-queues when Handoff stops or dies.
    pub requeue_on_restart: bool,
    /// Largest output/log artifact kept per task.
    pub artifact_max_bytes: ByteSize,
    /// Artifacts above this size are spilled to files.
    pub artifact_inline_bytes: ByteSize,
    /// Largest output event: consecutive lines are joined up to it, a longer line is clipped.
    pub output_event_max_bytes: ByteSize,
    /// Output events stored per run; later output is only counted.
    pub output_max_events: u32,
    /// Bytes of output events stored per run; later output is only counted.
    pub output_events_max_bytes: ByteSize,
    /// Files larger than this are not copied into a task's snapshot, only listed when changed.
    pub snapshot_max_file_bytes: ByteSize,
    /// Bytes copied into one snapshot at most; further files are listed like large ones.
    pub snapshot_max_bytes: ByteSize,
    /// Longest a snapshot or diff of the task directory may take.
    pub snapshot_timeout: Duration,
    /// Roots inside which a caller may choose the working directory.
    pub workdir_roots: Vec<PathBuf>,
    /// When Handoff-created working directories are removed.
    pub workdir_cleanup: WorkdirCleanup,
    /// Each new task directory is a worktree of this repository.
    pub git_repository: Option<PathBuf>,
    /// What happens to a task's branch when a round ends completed (a task may say otherwise).
    pub delivery: handoff_task::Delivery,
    /// The remote a pushed branch goes to.
    pub push_remote: String,
    /// A shell command run in the repository after each push (unset: none).
    pub after_push: Option<String>,
    /// Longest a push, or the `after_push` command, may take.
    pub delivery_timeout: Duration,
}

/// When Handoff removes the working directories it created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkdirCleanup {
    /// Keep them until the task is purged by retention.
    Retain,
    /// Remove them as soon as the task ends.
    OnCompletion,
}

impl WorkdirCleanup {
    /// The policy's name as the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkdirCleanup::Retain => "retain",
            WorkdirCleanup::OnCompletion => "on_completion",
        }
    }
}

/// How the `command` executor hands the prompt to its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptVia {
    /// Written to stdin.
    Stdin,
    /// Substituted for `{prompt}` in the argv.
    Argument,
}

impl PromptVia {
    /// The mode's name as the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptVia::Stdin => "stdin",
            PromptVia::Argument => "argument",
        }
    }
}

/// Settings of the executors Handoff offers.
#[derive(Debug, Clone)]
pub struct ExecutorsConfig {
    /// The `command` executor; offered only when its argv is configured.
    pub command: Option<CommandExecutorConfig>,
    /// The `opencode` executor (an OpenCode server Handoff starts, or one it attaches to).
    pub opencode: OpenCodeExecutorConfig,
    /// The `claude` executor (Claude Code, one process per task).
    pub claude: ClaudeExecutorConfig,
    /// The `codex` executor (Codex CLI's app server, one process per task).
    pub codex: CodexExecutorConfig,
    /// The ACP agents offered as executors, each under its own name.
    pub acp: AcpExecutors,
    /// What executors may do without asking.
    pub permissions: PermissionPolicy,
    /// An unanswered permission or question request is denied after this.
    pub ask_timeout: Duration,
}

/// The `claude` executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeExecutorConfig {
    /// The `claude` program.
    pub binary: String,
    /// `--model`; Claude Code's default when unset.
    pub model: Option<String>,
    /// Provider retries before Claude Code gives up (`CLAUDE_CODE_MAX_RETRIES`).
    pub max_retries: u32,
    /// Isolation level (`runner.isolation` when unset).
    pub isolation: Option<IsolationLevel>,
}

/// The `codex` executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexExecutorConfig {
    /// The `codex` program.
    pub binary: String,
    /// Model for every thread; Codex's configured model when unset.
    pub model: Option<String>,
    /// `CODEX_HOME` for the processes; inherited when unset.
    pub home: Option<PathBuf>,
    /// Provider retries before Codex gives up (a custom provider's `request_max_retries` and
    /// `stream_max_retries`).
    pub max_retries: u32,
    /// Isolation level (`runner.isolation` when unset).
    pub isolation: Option<IsolationLevel>,
}

/// The `opencode` executor.
#[derive(Debug, Clone)]
pub struct OpenCodeExecutorConfig {
    /// The `opencode` program Handoff starts `opencode serve` with.
    pub binary: String,
    /// Attach to this running server instead of starting one.
    pub url: Option<String>,
    /// Password of the attached server (HTTP Basic, user `opencode`).
    pub password: Option<Secret>,
    /// `provider/model` for every prompt; the server's own default when unset.
    pub model: Option<String>,
    /// Inline OpenCode config (JSON) for the server Handoff starts.
    pub config_json: Option<String>,
    /// Provider retries tolerated before the task fails.
    pub retry_max_attempts: u32,
    /// Time spent retrying the provider before the task fails.
    pub retry_max: Duration,
    /// Delete the OpenCode session when its task ends.
    pub delete_sessions: bool,
    /// Isolation level (`runner.isolation` when unset; `opencode-acp` sandboxes where it can).
    pub isolation: Option<IsolationLevel>,
    /// `opencode acp` agents `opencode-acp` keeps started ahead of tasks.
    pub pool: usize,
}

/// The `command` executor: runs a configured program per task.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandExecutorConfig {
    /// Program and arguments, with `{prompt}`, `{task_id}`, `{workdir}` placeholders.
    pub argv: Vec<String>,
    /// How the prompt reaches the program.
    pub prompt_via: PromptVia,
    /// Keep stdin open and deliver messages as JSON lines.
    pub messages_via_stdin: bool,
    /// Isolation level (`runner.isolation` when unset).
    pub isolation: Option<IsolationLevel>,
}

/// Per-task resource limits.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// CPUs per task.
    pub cpu_limit: Option<f64>,
    /// Memory per task.
    pub memory_limit: Option<ByteSize>,
    /// Container image (container isolation only).
    pub image: Option<String>,
    /// Isolation level of every executor without its own.
    pub isolation: IsolationLevel,
    /// Network inside sandbox and container.
    pub network: NetworkMode,
    /// Processes and threads per task.
    pub pids_limit: Option<u64>,
    /// Inherited variables kept besides the defaults.
    pub env_allow: Vec<String>,
    /// Writable inside the sandbox besides the task directory.
    pub sandbox_writable: Vec<PathBuf>,
    /// The bubblewrap program.
    pub bwrap: PathBuf,
    /// The docker client.
    pub docker: PathBuf,
    /// How often an unanswered Docker engine is asked again (`None`: never).
    pub docker_retry: Option<Duration>,
}

/// Feature switches.
#[derive(Debug, Clone)]
pub struct FeatureConfig {
    /// Allow asynchronous `execute_task`.
    pub async_execute: bool,
    /// Honour idempotency keys.
    pub enforce_idempotency: bool,
}

impl Config {
    /// The `host:port` string to bind.
    pub fn bind_address(&self) -> String {
        if self.server.host.contains(':') && !self.server.host.starts_with('[') {
            format!("[{}]:{}", self.server.host, self.server.port)
        } else {
            format!("{}:{}", self.server.host, self.server.port)
        }
    }

    /// Path of the embedded SQLite database.
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("handoff.db")
    }
}

/// Settings of the pipeline every tool call passes through.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    /// Which of Handoff's tools each agent may call, and with which arguments (`key=value`).
    pub permissions: PermissionPolicy,
    /// Repeats of one call that lead to a warning, a denial and a stop.
    pub loop_guard: Ladder,
    /// Calls of one agent to Handoff's tools count as repeats only within this time.
    pub loop_guard_window: Duration,
    /// The cap on every tool result's text fields (and, in bytes, on the whole result).
    pub output: Cap,
    /// Per-tool exceptions to `output`.
    pub output_limits: ToolOutputLimits,
    /// Spilled full outputs are removed after this.
    pub spill_retention: Duration,
}

impl ToolsConfig {
    /// The caps for `tool`.
    pub fn limits_for(&self, tool: &str) -> Limits {
        let field = self
            .output_limits
            .0
            .iter()
            .rev()
            .find(|l| l.tool == tool)
            .map_or(self.output, |l| l.apply(self.output));
        Limits {
            field,
            total_bytes: field.max_bytes,
        }
    }
}

/// The providers the model gateway forwards tasks' model calls to, and what it allows them.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelsConfig {
    /// Serve the gateway to tasks when a provider is set.
    pub gateway: bool,
    /// Every provider: the default one (`models.provider_url`) first, then the named ones by
    /// name; empty: no gateway.
    pub providers: Vec<crate::ModelProvider>,
    /// The model the built-in agents use through the gateway (`<provider>/<model>` names a
    /// named provider's).
    pub model: Option<String>,
    /// Executors kept off the gateway (their own provider settings).
    pub direct: Vec<String>,
    /// Calls one task may make per minute.
    pub task_calls_per_minute: Option<u32>,
    /// Calls one agent's tasks together may make per minute.
    pub agent_calls_per_minute: Option<u32>,
    /// Prices per model (`models.prices`), before a provider's flat price and the built-in table.
    pub prices: crate::PriceTable,
}

/// Why a call on some wire has no provider to go to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The model names a provider of another wire.
    #[error(
        "the model names the provider `{provider}`, which speaks the {wire} wire; call it at that wire's base URL"
    )]
    WrongWire {
        /// The provider named.
        provider: String,
        /// Its wire.
        wire: &'static str,
    },
    /// No provider speaks the wire.
    #[error(
        "no model provider of this Handoff speaks the {0} wire; use the base URL of another wire or configure a provider of this one"
    )]
    NoProvider(&'static str),
}

impl ModelsConfig {
    /// Whether the gateway serves tasks at all.
    pub fn gateway_on(&self) -> bool {
        self.gateway && !self.providers.is_empty()
    }

    /// Whether tasks of `executor` reach their model through the gateway.
    pub fn serves(&self, executor: &str) -> bool {
        self.gateway_on() && !self.direct.iter().any(|d| d == executor)
    }

    /// The provider named `name`.
    pub fn provider(&self, name: &str) -> Option<&crate::ModelProvider> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// Where a call on `wire` asking for `model` goes, and the model to send there when it
    /// differs: a model `<provider>/<name>` naming a configured provider goes to it as `<name>`;
    /// any other goes, as it is, to the first provider of the wire.
    pub fn route<'m>(
        &self,
        wire: crate::ModelWire,
        model: Option<&'m str>,
    ) -> Result<(&crate::ModelProvider, Option<&'m str>), RouteError> {
        if let Some((named, rest)) = model.and_then(|m| self.named_in(m)) {
            return match named.wire == wire {
                true => Ok((named, Some(rest))),
                false => Err(RouteError::WrongWire {
                    provider: named.name.clone(),
                    wire: named.wire.as_str(),
                }),
            };
        }
        self.providers
            .iter()
            .find(|p| p.wire == wire)
            .map(|p| (p, None))
            .ok_or(RouteError::NoProvider(wire.as_str()))
    }

    /// The provider `model` names by its prefix, and the model's name there.
    fn named_in<'m>(&self, model: &'m str) -> Option<(&crate::ModelProvider, &'m str)> {
        let (prefix, rest) = model.split_once('/')?;
        Some((self.provider(prefix)?, rest)).filter(|(_, rest)| !rest.is_empty())
    }

    /// The provider whose wire an agent that speaks either wire uses for `model`.
    pub fn provider_of(&self, model: &str) -> Option<&crate::ModelProvider> {
        self.named_in(model)
            .map(|(p, _)| p)
            .or_else(|| self.providers.first())
    }

    /// The model an agent asks the gateway for when its own setting names none: `models.model`
    /// when its provider speaks `wire` (any, for an agent that speaks both), else the first
    /// provider of that wire's own `model`, qualified with its name.
    pub fn model_for(&self, wire: Option<crate::ModelWire>) -> Option<String> {
        let fits = |p: &crate::ModelProvider| wire.is_none_or(|w| p.wire == w);
        if let Some(model) = &self.model
            && self.provider_of(model).is_some_and(fits)
        {
            return Some(model.clone());
        }
        self.providers
            .iter()
            .filter(|p| fits(p))
            .find_map(|p| p.model.as_deref().map(|m| p.qualified(m)))
    }

    /// The environment variables providers' keys are read from (kept from every task).
    pub fn key_envs(&self) -> Vec<&str> {
        let mut vars: Vec<&str> = Vec::new();
        for provider in &self.providers {
            if let crate::KeySource::Env(var) = &provider.key_source
                && !vars.contains(&var.as_str())
            {
                vars.push(var);
            }
        }
        vars
    }

    /// The files providers' keys are read from (hidden inside every sandbox).
    pub fn key_files(&self) -> Vec<&std::path::Path> {
        self.providers
            .iter()
            .filter_map(|p| match &p.key_source {
                crate::KeySource::File(path) => Some(path.as_path()),
                crate::KeySource::Env(_) => None,
            })
            .collect()
    }

    /// What a call's tokens of `model` from `provider` cost, in US dollars: the model's
    /// configured price, else the provider's flat price, else the built-in list price, else
    /// nothing.
    pub fn cost(&self, provider: &str, model: Option<&str>, tokens: crate::CallTokens) -> f64 {
        let flat = self.provider(provider).and_then(|p| p.price);
        let price = model
            .and_then(|m| self.prices.find(m))
            .or(flat)
            .or_else(|| model.and_then(|m| crate::PriceTable::defaults().find(m)));
        price.map_or(0.0, |p| p.cost(tokens.input, tokens.output, tokens.cached))
    }
}

/// The wire a model provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelWire {
    /// OpenAI's (Chat Completions and Responses; also OpenAI-compatible local servers).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl ModelWire {
    /// The wire's name as the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelWire::OpenAi => "openai",
            ModelWire::Anthropic => "anthropic",
        }
    }

    /// Where the provider's key usually is.
    pub fn default_key_env(self) -> &'static str {
        match self {
            ModelWire::OpenAi => "OPENAI_API_KEY",
            ModelWire::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}
