//! Resolution of the layers into a typed [`Config`].

use std::{path::PathBuf, time::Duration};

use handoff_llm::{Pricing, Provider};
use handoff_policy::{hooks::HooksConfig, loop_guard::Ladder, output::Cap};
use handoff_task::{CompletionBudget, CompletionPolicy};

use crate::{
    Argv, ByteSize, ClaudeExecutorConfig, CodexExecutorConfig, CommandExecutorConfig, Commands,
    CompletionConfig, Config, ConfigError, EvaluatorConfig, ExecutorsConfig, FeatureConfig,
    LettaConfig, LoadOptions, LogConfig, LogFormat, LogLevel, OpenCodeExecutorConfig,
    PermissionPolicy, PromptVia, RunnerConfig, Secret, ServerConfig, Source, TaskConfig,
    ToolOutputLimits, ToolsConfig, WorkdirCleanup,
    layers::Layers,
    parse::FromRaw,
    spec::{SETTINGS, SettingSpec},
};

/// One resolved setting as `handoff config` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EffectiveSetting {
    /// Dotted key.
    pub key: &'static str,
    /// The value, rendered; secrets masked.
    pub value: String,
    /// The layer that set it.
    #[serde(serialize_with = "source_text")]
    pub source: Source,
}

fn source_text<S: serde::Serializer>(source: &Source, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(source)
}

/// How a typed value is shown in `handoff config`.
trait Render {
    fn render(&self) -> String;

    /// True for types whose rendering already hides the secret (so a secret setting may show
    /// it, e.g. how many tokens and their roles); any other secret setting shows only the mask.
    fn masks_itself(&self) -> bool {
        false
    }
}

/// The one path by which a resolved value becomes text for people (`handoff config`, errors).
fn shown<T: Render>(spec: &SettingSpec, value: &T) -> String {
    if spec.secret && value.masks_itself() {
        value.render()
    } else {
        spec.render_raw(&value.render())
    }
}

macro_rules! render_display {
    ($($t:ty),*) => {$(impl Render for $t { fn render(&self) -> String { self.to_string() } })*};
}
render_display!(u16, u32, u64, f64, bool, String, ByteSize);

impl Render for Secret {
    fn render(&self) -> String {
        self.masked().to_owned()
    }
    fn masks_itself(&self) -> bool {
        true
    }
}

impl Render for crate::TokenGrants {
    fn masks_itself(&self) -> bool {
        true
    }
    fn render(&self) -> String {
        // Shown like the other empty lists (and a valid TOML value for `handoff init`).
        if self.0.is_empty() {
            return "[]".to_owned();
        }
        let roles: Vec<&str> = self.0.iter().map(|g| g.role.as_str()).collect();
        format!(
            "{} token(s): {} (tokens masked)",
            roles.len(),
            roles.join(", ")
        )
    }
}

impl Render for PathBuf {
    fn render(&self) -> String {
        self.display().to_string()
    }
}
impl Render for Vec<String> {
    fn render(&self) -> String {
        format!("[{}]", self.join(", "))
    }
}
impl Render for LogLevel {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for Argv {
    fn render(&self) -> String {
        serde_json::Value::from(self.0.clone()).to_string()
    }
}
impl Render for PromptVia {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for WorkdirCleanup {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for ToolOutputLimits {
    fn render(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
impl Render for HooksConfig {
    fn render(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
impl Render for crate::NotifyRole {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}

impl Render for CompletionPolicy {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for Provider {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for Commands {
    fn render(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }
}
impl Render for PermissionPolicy {
    fn render(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
impl Render for handoff_isolation::IsolationLevel {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for handoff_isolation::NetworkMode {
    fn render(&self) -> String {
        match self {
            handoff_isolation::NetworkMode::Shared => "shared".to_owned(),
            handoff_isolation::NetworkMode::Off => "off".to_owned(),
        }
    }
}
impl Render for LogFormat {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}

struct Resolver {
    layers: Layers,
    effective: Vec<EffectiveSetting>,
}

impl Resolver {
    fn spec(key: &'static str) -> &'static SettingSpec {
        match SETTINGS.iter().find(|s| s.key == key) {
            Some(spec) => spec,
            // The keys below are literals checked by `every_setting_is_resolved`.
            None => unreachable!("setting {key} missing from SETTINGS"),
        }
    }

    fn opt<T: FromRaw + Render>(&mut self, key: &'static str) -> Result<Option<T>, ConfigError> {
        let spec = Self::spec(key);
        let Some((raw, source)) = self.layers.lookup(spec)? else {
            return Ok(None);
        };
        let value = T::from_raw(&raw).map_err(|reason| ConfigError::Invalid {
            key,
            origin: source.clone(),
            value: match &raw {
                crate::layers::RawValue::Text(t) => spec.render_raw(t),
                // As JSON, so secrets inside a TOML table or array are found and masked.
                crate::layers::RawValue::Toml(v) => {
                    spec.render_raw(&serde_json::to_string(v).unwrap_or_else(|_| v.to_string()))
                }
            },
            reason,
        })?;
        self.effective.push(EffectiveSetting {
            key,
            value: shown(spec, &value),
            source,
        });
        Ok(Some(value))
    }

    fn get<T: FromRaw + Render>(
        &mut self,
        key: &'static str,
        default: T,
    ) -> Result<T, ConfigError> {
        match self.opt(key)? {
            Some(value) => Ok(value),
            None => {
                self.effective.push(EffectiveSetting {
                    key,
                    value: shown(Self::spec(key), &default),
                    source: Source::Default,
                });
                Ok(default)
            }
        }
    }

    /// Like [`Resolver::opt`], recording "unset" when no layer sets it.
    fn optional<T: FromRaw + Render>(
        &mut self,
        key: &'static str,
    ) -> Result<Option<T>, ConfigError> {
        let value = self.opt(key)?;
        if value.is_none() {
            self.effective.push(EffectiveSetting {
                key,
                value: "(unset)".to_owned(),
                source: Source::Default,
            });
        }
        Ok(value)
    }

    /// [`Resolver::get`], then [`Resolver::check`] of the value under the same key.
    fn get_checked<T: FromRaw + Render>(
        &mut self,
        key: &'static str,
        default: T,
        ok: impl FnOnce(&T) -> Result<(), String>,
    ) -> Result<T, ConfigError> {
        let value = self.get(key, default)?;
        self.check(key, value, ok)
    }

    fn check<T>(
        &self,
        key: &'static str,
        value: T,
        ok: impl FnOnce(&T) -> Result<(), String>,
    ) -> Result<T, ConfigError> {
        match ok(&value) {
            Ok(()) => Ok(value),
            Err(reason) => {
                let found = self.effective.iter().rev().find(|e| e.key == key);
                Err(ConfigError::Invalid {
                    key,
                    origin: found.map_or(Source::Default, |e| e.source.clone()),
                    value: found.map_or_else(String::new, |e| e.value.clone()),
                    reason,
                })
            }
        }
    }
}

/// The `[matrix]` section.
fn matrix_config(r: &mut Resolver) -> Result<crate::MatrixConfig, ConfigError> {
    let d = crate::MatrixConfig::off();
    let url = r.optional::<String>("matrix.homeserver_url")?;
    let homeserver_url = r.check("matrix.homeserver_url", url, http_url)?;
    let users = |list: &Vec<String>| {
        list.iter().enumerate().try_for_each(|(i, u)| {
            handoff_task::MatrixUserId::parse(u)
                .map(|_| ())
                .map_err(|e| format!("entry {}: {e}", i + 1))
        })
    };
    let observers = r.get_checked("matrix.default_observers", Vec::<String>::new(), users)?;
    let patterns = |list: &Vec<String>| {
        list.iter().enumerate().try_for_each(|(i, c)| {
            crate::Controller::parse(c)
                .map(|_| ())
                .map_err(|e| format!("entry {}: {e}", i + 1))
        })
    };
    let controllers = r.get_checked("matrix.controllers", Vec::<String>::new(), patterns)?;
    Ok(crate::MatrixConfig {
        homeserver_url,
        access_token: r.optional("matrix.access_token")?,
        room_per_task: r.get("matrix.room_per_task", d.room_per_task)?,
        observers_may_talk: r.get("matrix.observers_may_talk", d.observers_may_talk)?,
        default_observers: observers
            .iter()
            .filter_map(|u| handoff_task::MatrixUserId::parse(u).ok())
            .collect(),
        controllers: controllers
            .iter()
            .filter_map(|c| crate::Controller::parse(c).ok())
            .collect(),
        event_interval: Duration::from_millis(r.get_checked(
            "matrix.event_interval_ms",
            d.event_interval.as_millis() as u64,
            positive_millis,
        )?),
        archive_after: Duration::from_secs(
            r.get("matrix.archive_after_secs", d.archive_after.as_secs())?,
        ),
        request_timeout: Duration::from_secs(r.get_checked(
            "matrix.request_timeout_secs",
            d.request_timeout.as_secs(),
            at_least_one_u64,
        )?),
        sync_timeout: Duration::from_millis(
            r.get("matrix.sync_timeout_ms", d.sync_timeout.as_millis() as u64)?,
        ),
        queue_limit: r.get_checked("matrix.queue_limit", d.queue_limit as u32, at_least_one)?
            as usize,
    })
}

fn at_least_one(v: &u32) -> Result<(), String> {
    if *v >= 1 {
        Ok(())
    } else {
        Err("must be at least 1".to_owned())
    }
}

fn at_least_one_u64(v: &u64) -> Result<(), String> {
    at_least_one(&u32::try_from(*v).unwrap_or(u32::MAX))
}

fn at_least_one_byte(v: &ByteSize) -> Result<(), String> {
    if v.bytes() >= 1 {
        Ok(())
    } else {
        Err("must be at least 1 byte".to_owned())
    }
}

fn positive_millis(v: &u64) -> Result<(), String> {
    if *v >= 1 {
        Ok(())
    } else {
        Err("must be at least 1 ms".to_owned())
    }
}

/// An allowed Origin is `null` or `scheme://host[:port|:*]` with nothing after the authority.
fn valid_origins(origins: &Vec<String>) -> Result<(), String> {
    for origin in origins {
        if origin == "null" {
            continue;
        }
        let Some((scheme, rest)) = origin.split_once("://") else {
            return Err(format!(
                "origin {origin:?} needs a scheme, e.g. http://localhost:*"
            ));
        };
        if scheme.is_empty() || rest.is_empty() || rest.contains('/') {
            return Err(format!(
                "origin {origin:?} must be scheme://host[:port], with no path"
            ));
        }
    }
    Ok(())
}

fn http_url(url: &Option<String>) -> Result<(), String> {
    match url {
        Some(u) if !(u.starts_with("http://") || u.starts_with("https://")) => {
            Err("expected an http:// or https:// URL".to_owned())
        }
        _ => Ok(()),
    }
}

fn postgres_url(url: &Option<String>) -> Result<(), String> {
    match url {
        Some(u) if !(u.starts_with("postgres://") || u.starts_with("postgresql://")) => {
            Err("expected a postgres:// or postgresql:// URL".to_owned())
        }
        _ => Ok(()),
    }
}

fn json_object(json: &Option<String>) -> Result<(), String> {
    match json
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
    {
        Some(Ok(serde_json::Value::Object(_))) | None => Ok(()),
        Some(Ok(_)) => Err("expected a JSON object".to_owned()),
        Some(Err(e)) => Err(format!("expected a JSON object: {e}")),
    }
}

fn loopback_hosts() -> Vec<String> {
    ["localhost", "127.0.0.1", "::1"]
        .map(str::to_owned)
        .to_vec()
}

fn loopback_origins() -> Vec<String> {
    ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
        .map(str::to_owned)
        .to_vec()
}

impl Config {
    /// Resolves the configuration from `options`; any invalid value is an error naming its source.
    pub fn load(options: LoadOptions) -> Result<Config, ConfigError> {
        let layers = Layers::load(options)?;
        if let Some(unknown) = layers.unknown_file_keys(SETTINGS) {
            return Err(unknown);
        }
        let mut r = Resolver {
            layers,
            effective: Vec::with_capacity(SETTINGS.len()),
        };

        let host: String = r.get("server.host", "127.0.0.1".to_owned())?;
        let port = r.get("server.port", 3500u16)?;
        let mut allowed_hosts = r.get("server.allowed_hosts", loopback_hosts())?;
        let allowed_origins =
            r.get_checked("server.allowed_origins", loopback_origins(), valid_origins)?;
        let cors_origins =
            r.get_checked("server.cors_origins", Vec::<String>::new(), valid_origins)?;
        let public_url = r.optional::<String>("server.public_url")?;
        let public_url = r
            .check("server.public_url", public_url, crate::public_url::check)?
            .map(crate::public_url::normalize);
        let auth_token = r.optional::<Secret>("server.auth_token")?;
        let tokens = r.get("auth.tokens", crate::TokenGrants::default())?;
        let default_agent = r.optional::<String>("auth.default_agent")?;
        let default_agent = r.check("auth.default_agent", default_agent, |agent| {
            agent.as_deref().map_or(Ok(()), |a| {
                handoff_task::AgentId::parse(a)
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
        })?;
        let default_agent = default_agent.and_then(|a| handoff_task::AgentId::parse(&a).ok());
        let max_body_bytes = r.get("server.max_body_bytes", ByteSize(4 << 20))?;
        let idle = r.get("server.session_idle_timeout_secs", 1800u64)?;
        let unused = r.get_checked(
            "server.unused_session_timeout_secs",
            30u64,
            at_least_one_u64,
        )?;
        let max_sessions = r.get_checked("server.max_sessions", 1024u32, at_least_one)?;
        let per_client = r.get_checked("server.max_sessions_per_client", 64u32, at_least_one)?;
        let grace = r.get("server.shutdown_grace_secs", 10u64)?;
        let header_secs =
            r.get_checked("server.header_read_timeout_secs", 10u64, at_least_one_u64)?;
        let body_secs = r.get_checked("server.body_read_timeout_secs", 30u64, at_least_one_u64)?;
        let keep_alive_secs =
            r.get_checked("server.keep_alive_timeout_secs", 60u64, at_least_one_u64)?;
        let max_connections = r.get_checked("server.max_connections", 512u32, at_least_one)?;
        // A non-loopback bind name must be an accepted Host, or the server would refuse itself.
        if !["0.0.0.0", "::", "[::]"].contains(&host.as_str())
            && !allowed_hosts.iter().any(|h| h == &host)
        {
            allowed_hosts.push(host.clone());
        }
        // Other services reach Handoff by its public name: the Host they send is Handoff's own.
        if let Some(public) = public_url.as_deref().and_then(crate::public_url::host)
            && !allowed_hosts.contains(&public)
        {
            allowed_hosts.push(public);
        }
        let server = ServerConfig {
            host,
            port,
            allowed_hosts,
            allowed_origins,
            cors_origins,
            public_url,
            auth_token,
            tokens,
            default_agent,
            max_body_bytes,
            session_idle_timeout: Duration::from_secs(idle),
            unused_session_timeout: Duration::from_secs(unused),
            max_sessions,
            max_sessions_per_client: per_client,
            shutdown_grace: Duration::from_secs(grace),
            header_read_timeout: Duration::from_secs(header_secs),
            body_read_timeout: Duration::from_secs(body_secs),
            keep_alive_timeout: Duration::from_secs(keep_alive_secs),
            max_connections,
        };

        let log = LogConfig {
            level: r.get("log.level", LogLevel::Info)?,
            format: r.get("log.format", LogFormat::Auto)?,
        };
        let data_dir: PathBuf = r.get("data_dir", PathBuf::from(".handoff"))?;
        let workspace_dir = r.get("workspace_dir", data_dir.join("workspaces"))?;
        let database_url = r.optional::<String>("store.url")?;
        let database_url = r.check("store.url", database_url, postgres_url)?;

        let max_concurrent = r.get_checked("tasks.max_concurrent", 10u32, at_least_one)?;
        let per_agent = r.get_checked(
            "tasks.max_concurrent_per_agent",
            max_concurrent,
            at_least_one,
        )?;
        let max_queued = r.get("tasks.max_queued", 1000u32)?;
        let timeout_ms = r.get_checked("tasks.default_timeout_ms", 300_000u64, positive_millis)?;
        let sync_wait_ms = r.get("tasks.sync_wait_ms", 25_000u64)?;
        let poll_interval_ms =
            r.get_checked("tasks.poll_interval_ms", 1_000u64, positive_millis)?;
        let max_description_bytes = r.get("tasks.max_description_bytes", ByteSize(64 << 10))?;
        let tasks = TaskConfig {
            max_concurrent,
            max_concurrent_per_agent: per_agent,
            max_queued,
            default_timeout: Duration::from_millis(timeout_ms),
            sync_wait: Duration::from_millis(sync_wait_ms),
            poll_interval: Duration::from_millis(poll_interval_ms),
            max_description_bytes,
            default_executor: r.get("tasks.default_executor", "opencode".to_owned())?,
            idempotency_window: Duration::from_secs(
                r.get("tasks.idempotency_window_secs", 86_400u64)?,
            ),
            retention: Duration::from_secs(r.get("tasks.retention_days", 30u64)? * 86_400),
            submissions_per_minute: Some(r.get("tasks.submissions_per_minute", 120u32)?)
                .filter(|rate| *rate > 0),
            submission_burst: r.get_checked("tasks.submission_burst", 20u32, at_least_one)?,
            cancel_grace: Duration::from_millis(r.get("tasks.cancel_grace_ms", 5_000u64)?),
            artifact_max_bytes: r.get("tasks.artifact_max_bytes", ByteSize(64 << 20))?,
            artifact_inline_bytes: r.get("tasks.artifact_inline_bytes", ByteSize(256 << 10))?,
            output_event_max_bytes: r.get_checked(
                "tasks.output_event_max_bytes",
                ByteSize(64 << 10),
                at_least_one_byte,
            )?,
            output_max_events: r.get("tasks.output_max_events", 10_000u32)?,
            output_events_max_bytes: r.get("tasks.output_events_max_bytes", ByteSize(16 << 20))?,
            snapshot_max_file_bytes: r.get("tasks.snapshot_max_file_bytes", ByteSize(8 << 20))?,
            snapshot_max_bytes: r.get("tasks.snapshot_max_bytes", ByteSize(256 << 20))?,
            snapshot_timeout: Duration::from_secs(r.get_checked(
                "tasks.snapshot_timeout_secs",
                60u64,
                at_least_one_u64,
            )?),
            workdir_roots: r
                .get("tasks.workdir_roots", Vec::<String>::new())?
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            workdir_cleanup: r.get("tasks.workdir_cleanup", WorkdirCleanup::Retain)?,
            git_repository: r.optional("tasks.git_repository")?,
        };
        let command_argv = r.optional::<Argv>("executors.command.argv")?;
        let prompt_via = r.get("executors.command.prompt_via", PromptVia::Stdin)?;
        let messages_via_stdin = r.get("executors.command.messages_via_stdin", false)?;
        let command_isolation = r.optional("executors.command.isolation")?;
        let executors = ExecutorsConfig {
            command: command_argv.map(|argv| CommandExecutorConfig {
                argv: argv.0,
                prompt_via,
                messages_via_stdin,
                isolation: command_isolation,
            }),
            opencode: OpenCodeExecutorConfig {
                binary: r.get("executors.opencode.binary", "opencode".to_owned())?,
                url: {
                    let url = r.optional::<String>("executors.opencode.url")?;
                    r.check("executors.opencode.url", url, http_url)?
                },
                password: r.optional("executors.opencode.password")?,
                model: r.optional("executors.opencode.model")?,
                config_json: {
                    let json = r.optional::<String>("executors.opencode.config")?;
                    r.check("executors.opencode.config", json, json_object)?
                },
                retry_max_attempts: r.get("executors.opencode.retry_max_attempts", 5u32)?,
                retry_max: Duration::from_secs(r.get("executors.opencode.retry_max_secs", 120u64)?),
                delete_sessions: r.get("executors.opencode.delete_sessions", true)?,
                isolation: r.optional("executors.opencode.isolation")?,
            },
            claude: ClaudeExecutorConfig {
                binary: r.get("executors.claude.binary", "claude".to_owned())?,
                model: r.optional("executors.claude.model")?,
                max_retries: r.get("executors.claude.max_retries", 3u32)?,
                isolation: r.optional("executors.claude.isolation")?,
            },
            codex: CodexExecutorConfig {
                binary: r.get("executors.codex.binary", "codex".to_owned())?,
                model: r.optional("executors.codex.model")?,
                home: r.optional("executors.codex.home")?,
                max_retries: r.get("executors.codex.max_retries", 2u32)?,
                isolation: r.optional("executors.codex.isolation")?,
            },
            permissions: r.get("executors.permissions", PermissionPolicy::default())?,
            ask_timeout: Duration::from_secs(r.get("executors.ask_timeout_secs", 600u64)?),
        };

        let runner = RunnerConfig {
            cpu_limit: r.optional("runner.cpu_limit")?,
            memory_limit: r.optional("runner.memory_limit")?,
            image: r.optional("runner.image")?,
            isolation: r.get(
                "runner.isolation",
                handoff_isolation::IsolationLevel::Process,
            )?,
            network: r.get("runner.network", handoff_isolation::NetworkMode::Shared)?,
            pids_limit: r.optional("runner.pids_limit")?,
            env_allow: r.get("runner.env_allow", Vec::<String>::new())?,
            sandbox_writable: r
                .get("runner.sandbox_writable", Vec::<String>::new())?
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            bwrap: r.get("runner.bwrap", PathBuf::from("bwrap"))?,
            docker: r.get("runner.docker", PathBuf::from("docker"))?,
        };
        let api_url = r.optional::<String>("letta.api_url")?;
        let api_url = r.check("letta.api_url", api_url, http_url)?;
        let letta = {
            let d = LettaConfig::off();
            let secs = |s: u64| Duration::from_secs(s);
            LettaConfig {
                api_url,
                api_token: r.optional("letta.api_token")?,
                tool_prefix: r.get_checked(
                    "letta.tool_prefix",
                    d.tool_prefix.clone(),
                    |p: &String| crate::check_tool_prefix(p),
                )?,
                workspace_blocks: r.get("letta.workspace_blocks", d.workspace_blocks)?,
                block_limit: {
                    let limit = r.get("letta.block_limit", d.block_limit)?;
                    r.check("letta.block_limit", limit, |l| {
                        if *l >= crate::letta::MIN_BLOCK_LIMIT {
                            Ok(())
                        } else {
                            Err(format!(
                                "a workspace block needs at least {} characters",
                                crate::letta::MIN_BLOCK_LIMIT
                            ))
                        }
                    })?
                },
                min_update_interval: Duration::from_millis(r.get(
                    "letta.min_update_interval_ms",
                    d.min_update_interval.as_millis() as u64,
                )?),
                detach_delay: secs(r.get("letta.detach_delay_secs", d.detach_delay.as_secs())?),
                block_retention: secs(
                    r.get("letta.block_retention_secs", d.block_retention.as_secs())?,
                ),
                notify: r.get("letta.notify", d.notify)?,
                notify_role: r.get("letta.notify_role", d.notify_role)?,
                notify_sync: r.get("letta.notify_sync", d.notify_sync)?,
                request_timeout: secs(r.get_checked(
                    "letta.request_timeout_secs",
                    d.request_timeout.as_secs(),
                    at_least_one_u64,
                )?),
                max_retries: r.get("letta.max_retries", d.max_retries)?,
                max_concurrent_requests: r.get_checked(
                    "letta.max_concurrent_requests",
                    d.max_concurrent_requests,
                    at_least_one,
                )?,
                requests_per_second: r.get_checked(
                    "letta.requests_per_second",
                    d.requests_per_second,
                    at_least_one,
                )?,
                sweep_interval: secs(r.get_checked(
                    "letta.sweep_interval_secs",
                    d.sweep_interval.as_secs(),
                    at_least_one_u64,
                )?),
            }
        };
        let matrix = matrix_config(&mut r)?;
        let tools = ToolsConfig {
            permissions: r.get("tools.permissions", PermissionPolicy::allow_all())?,
            loop_guard: {
                let ladder = Ladder {
                    warn: r.get("tools.loop_guard_warn", Ladder::default().warn)?,
                    deny: r.get("tools.loop_guard_deny", Ladder::default().deny)?,
                    stop: r.get("tools.loop_guard_stop", Ladder::default().stop)?,
                };
                r.check("tools.loop_guard_stop", ladder, |l| {
                    if 1 <= l.warn && l.warn <= l.deny && l.deny <= l.stop {
                        Ok(())
                    } else {
                        Err("the loop guard needs 1 <= warn <= deny <= stop".to_owned())
                    }
                })?
            },
            loop_guard_window: Duration::from_secs(r.get("tools.loop_guard_window_secs", 600u64)?),
            output: Cap {
                max_lines: r.get("tools.output_max_lines", 2000u64)? as usize,
                max_bytes: r.get("tools.output_max_bytes", ByteSize(50 * 1024))?.0 as usize,
                direction: Default::default(),
            },
            output_limits: r.get("tools.output_limits", ToolOutputLimits::default())?,
            spill_retention: Duration::from_secs(
                r.get("tools.spill_retention_days", 7u64)? * 24 * 3600,
            ),
        };
        let hooks = r.get("hooks", HooksConfig::default())?;
        let completion = CompletionConfig {
            policy: r.get("completion.policy", CompletionPolicy::Checks)?,
            verify_commands: r.get("completion.verify_commands", Commands::default())?.0,
            max_cycles: {
                let n = r.get("completion.max_cycles", 5u32)?;
                r.check("completion.max_cycles", n, |n| {
                    if (1..=50).contains(n) {
                        Ok(())
                    } else {
                        Err("expected 1 to 50".to_owned())
                    }
                })?
            },
            min_confidence: {
                let c = r.get("completion.min_confidence", 0.7f64)?;
                r.check("completion.min_confidence", c, |c| {
                    if (0.0..=1.0).contains(c) {
                        Ok(())
                    } else {
                        Err("expected 0 to 1".to_owned())
                    }
                })?
            },
            budget: CompletionBudget {
                wall_ms: r
                    .optional::<u64>("completion.budget_wall_secs")?
                    .map(|s| s * 1000),
                turns: r.optional("completion.budget_turns")?,
                tokens: r.optional("completion.budget_tokens")?,
                cost_usd: r.optional("completion.budget_cost_usd")?,
            },
            verify_timeout: Duration::from_secs(r.get_checked(
                "completion.verify_timeout_secs",
                600u64,
                at_least_one_u64,
            )?),
            protected_paths: r.get("completion.protected_paths", Vec::<String>::new())?,
        };
        let api_key_env: Option<String> = r.optional("evaluator.api_key_env")?;
        let price_in: Option<f64> = r.optional("evaluator.price_input_per_mtok")?;
        let price_out: Option<f64> = r.optional("evaluator.price_output_per_mtok")?;
        let evaluator = EvaluatorConfig {
            provider: r.optional("evaluator.provider")?,
            model: r.optional("evaluator.model")?,
            api_key: api_key_env
                .as_deref()
                .and_then(|name| r.layers.variable(name))
                .map(Secret::new),
            api_key_env,
            base_url: {
                let url = r.optional::<String>("evaluator.base_url")?;
                r.check("evaluator.base_url", url, http_url)?
            },
            timeout: Duration::from_secs(r.get("evaluator.timeout_secs", 60u64)?),
            max_retries: r.get("evaluator.max_retries", 3u32)?,
            pricing: (price_in.is_some() || price_out.is_some()).then(|| Pricing {
                input_per_mtok: price_in.unwrap_or(0.0),
                output_per_mtok: price_out.unwrap_or(0.0),
            }),
        };
        // A server default that needs a judge without one would refuse every task.
        let completion = {
            let judged = matches!(
                completion.policy,
                CompletionPolicy::Judge | CompletionPolicy::Manager
            );
            let has_model = evaluator.provider.is_some() && evaluator.model.is_some();
            r.check("completion.policy", completion, |_| {
                if judged && !has_model {
                    Err(
                        "policies judge and manager need evaluator.provider and evaluator.model"
                            .to_owned(),
                    )
                } else {
                    Ok(())
                }
            })?
        };
        let features = FeatureConfig {
            async_execute: r.get("features.async_execute", true)?,
            enforce_idempotency: r.get("features.enforce_idempotency", true)?,
        };

        Ok(Config {
            server,
            log,
            data_dir,
            database_url,
            workspace_dir,
            tasks,
            runner,
            executors,
            letta,
            matrix,
            features,
            tools,
            hooks,
            completion,
            evaluator,
            effective: r.effective,
        })
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
