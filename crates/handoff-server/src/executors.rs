//! Which executors this configuration offers, built from the typed config.

use std::sync::Arc;

use handoff_config::{AcpExecutorConfig, CommandExecutorConfig, Config, OpenCodeExecutorConfig};
use handoff_isolation::{EnvPolicy, IsolationLevel, Isolator};
use handoff_runner::{
    AcpConfig, AcpExecutor, CheckRunner, ClaudeConfig, ClaudeExecutor, CodexConfig, CodexExecutor,
    CommandConfig, CommandExecutor, ExecutorRegistry, Isolation, OpenCodeCliConfig,
    OpenCodeCliExecutor, OpenCodeConfig, OpenCodeExecutor, OpenCodeServer, PoolSettings, PromptVia,
    RunnerError,
};

use crate::{
    agent_homes::{absolute, claude_homes, codex_homes, opencode_homes},
    isolation::isolation,
    program::find_program,
};

/// The executors, plus the OpenCode one by itself (its managed server needs starting and
/// stopping) and a line per executor for `health`.
pub(crate) struct Executors {
    pub registry: ExecutorRegistry,
    pub opencode: Option<Arc<OpenCodeExecutor>>,
    /// The ACP executors, whose pools start once the runtime runs and stop at shutdown.
    pub acp: Vec<Arc<AcpExecutor>>,
    pub notes: Vec<String>,
}

/// Builds every executor the configuration makes available, each confined by `isolator` at
/// its configured level.
pub(crate) fn build(config: &Config, isolator: &Arc<Isolator>) -> Result<Executors, RunnerError> {
    let mut registry = ExecutorRegistry::new();
    let mut notes = Vec::new();
    let mut acp = Vec::new();
    let confine = |level| Some(isolation(config, isolator, level));
    if let Some(command) = &config.executors.command {
        registry.register(Arc::new(CommandExecutor::new(command_config(
            command,
            confine(command.isolation),
        ))?));
    }
    claude_and_codex(config, isolator, &mut registry, &mut notes)?;
    let opencode = opencode_executors(config, isolator, &mut registry, &mut notes, &mut acp)?;
    // Configured ACP agents come last: one named like a built-in executor replaces it.
    for agent in &config.executors.acp.0 {
        let pool = pool_settings(config, agent.pool);
        let level = crate::isolation::agent_level(agent.isolation, config, isolator);
        let isolation = confine(Some(level));
        if let Some(executor) = acp_executor(&mut registry, &mut notes, agent, isolation, pool)? {
            acp.push(executor);
        }
        registry.set_checks(&agent.name, CheckRunner::new(confine(Some(level))));
    }
    // Verify commands run confined like the task's own executor.
    let levels = [
        (
            handoff_runner::OPENCODE,
            config.executors.opencode.isolation,
        ),
        (
            handoff_runner::OPENCODE_CLI,
            config.executors.opencode.isolation,
        ),
        (
            OPENCODE_ACP,
            Some(crate::isolation::opencode_acp_level(config, isolator)),
        ),
        (handoff_runner::CLAUDE, config.executors.claude.isolation),
        (handoff_runner::CODEX, config.executors.codex.isolation),
        (
            handoff_runner::COMMAND,
            config.executors.command.as_ref().and_then(|c| c.isolation),
        ),
    ];
    for (name, level) in levels {
        registry.set_checks(name, CheckRunner::new(confine(level)));
    }
    Ok(Executors {
        registry,
        opencode,
        acp,
        notes,
    })
}

/// Claude Code and Codex, each when its program is found, else marked missing with the fix.
fn claude_and_codex(
    config: &Config,
    isolator: &Arc<Isolator>,
    registry: &mut ExecutorRegistry,
    notes: &mut Vec<String>,
) -> Result<(), RunnerError> {
    let confine = |level| Some(isolation(config, isolator, level));
    let claude = &config.executors.claude;
    match find_program(&claude.binary) {
        Some(binary) => {
            registry.register(Arc::new(ClaudeExecutor::new(ClaudeConfig {
                binary: binary.to_string_lossy().into_owned(),
                model: claude
                    .model
                    .clone()
                    .or_else(|| gateway_model(config, handoff_runner::CLAUDE)),
                max_retries: claude.max_retries,
                env: Vec::new(),
                isolation: confine(claude.isolation),
                homes: Some(claude_homes(config)),
            })?));
        }
        None => {
            let how = "npm install -g @anthropic-ai/claude-code, or set HANDOFF_CLAUDE_BINARY";
            registry.mark_missing(handoff_runner::CLAUDE, how);
            notes.push(format!(
                "claude: `{}` not found on PATH ({how})",
                claude.binary
            ));
        }
    }
    let codex = &config.executors.codex;
    match find_program(&codex.binary) {
        Some(binary) => {
            registry.register(Arc::new(CodexExecutor::new(CodexConfig {
                binary: binary.to_string_lossy().into_owned(),
                model: codex
                    .model
                    .clone()
                    .or_else(|| gateway_model(config, handoff_runner::CODEX)),
                home: codex.home.clone(),
                max_retries: codex.max_retries,
                env: Vec::new(),
                isolation: confine(codex.isolation),
                homes: Some(codex_homes(config)),
            })?));
        }
        None => {
            let how = "npm install -g @openai/codex, or set HANDOFF_CODEX_BINARY";
            registry.mark_missing(handoff_runner::CODEX, how);
            notes.push(format!(
                "codex: `{}` not found on PATH ({how})",
                codex.binary
            ));
        }
    }
    Ok(())
}

/// The gateway's model for `executor`'s agents, when the gateway serves it: `models.model`,
/// or the first provider's of the executor's wire.
fn gateway_model(config: &Config, executor: &str) -> Option<String> {
    let models = &config.models;
    models
        .model_for(executor_wire(executor))
        .filter(|_| models.serves(executor))
}

/// The one wire a built-in executor's agent speaks; `None` for one that speaks either.
pub(crate) fn executor_wire(executor: &str) -> Option<handoff_config::ModelWire> {
    match executor {
        handoff_runner::CLAUDE => Some(handoff_config::ModelWire::Anthropic),
        handoff_runner::CODEX => Some(handoff_config::ModelWire::OpenAi),
        _ => None,
    }
}

/// The model a built-in executor's agents ask the gateway for, as its config is built here;
/// `None` when the gateway does not serve it or names no model for it.
pub(crate) fn model_through_gateway(config: &Config, executor: &str) -> Option<String> {
    if !config.models.serves(executor) {
        return None;
    }
    let own = match executor {
        OPENCODE_ACP | handoff_runner::OPENCODE_CLI => {
            let empty = serde_json::json!({});
            return crate::opencode_gateway::with_gateway(config, executor, empty).1;
        }
        handoff_runner::CLAUDE => &config.executors.claude.model,
        handoff_runner::CODEX => &config.executors.codex.model,
        _ => return None,
    };
    own.clone().or_else(|| gateway_model(config, executor))
}

/// The OpenCode executors when the program is there: the shared server's (`opencode`), and,
/// when Handoff manages that server, `opencode-acp` (unless a configured ACP agent takes its
/// name) and `opencode-cli`; else all three are marked missing.
fn opencode_executors(
    config: &Config,
    isolator: &Arc<Isolator>,
    registry: &mut ExecutorRegistry,
    notes: &mut Vec<String>,
    acp: &mut Vec<Arc<AcpExecutor>>,
) -> Result<Option<Arc<OpenCodeExecutor>>, RunnerError> {
    let confine = |level| Some(isolation(config, isolator, level));
    let opencode = match opencode_server(config) {
        Some(server) => {
            // A configured ACP agent of the same name replaces the built-in: none is started.
            let replaced = config
                .executors
                .acp
                .0
                .iter()
                .any(|a| a.name == OPENCODE_ACP);
            if let OpenCodeServer::Managed { binary, env, .. } = &server
                && !replaced
            {
                let executor = Arc::new(AcpExecutor::new(opencode_acp_config(
                    config,
                    binary,
                    env,
                    opencode_acp_isolation(config, isolator),
                ))?);
                registry.register(executor.clone());
                acp.push(executor);
                // The same program and settings, one `opencode run` per task.
                let (cli_env, model) = opencode_cli_env(config, env);
                registry.register(Arc::new(OpenCodeCliExecutor::new(OpenCodeCliConfig {
                    binary: binary.clone(),
                    model,
                    attach: None,
                    env: cli_env,
                    isolation: confine(config.executors.opencode.isolation),
                    homes: Some(opencode_homes(config, handoff_runner::OPENCODE_CLI)),
                })?));
            }
            let executor = Arc::new(OpenCodeExecutor::new(opencode_config(config, server))?);
            registry.register(executor.clone());
            Some(executor)
        }
        None => {
            let how =
                "npm install -g opencode-ai, or set HANDOFF_OPENCODE_BINARY / HANDOFF_OPENCODE_URL";
            registry.mark_missing(handoff_runner::OPENCODE, how);
            registry.mark_missing(handoff_runner::OPENCODE_CLI, how);
            registry.mark_missing(OPENCODE_ACP, how);
            notes.push(format!(
                "opencode: `{}` not found on PATH ({how})",
                config.executors.opencode.binary
            ));
            None
        }
    };
    Ok(opencode)
}

/// `opencode-acp`'s confinement: its level (a sandbox where the host can). Nothing of the host
/// is writable in its sandbox but the task directory and the agent's own home
/// ([`opencode_homes`]), OpenCode's cache included: a copy of it is in each home.
fn opencode_acp_isolation(config: &Config, isolator: &Arc<Isolator>) -> Option<Isolation> {
    let level = crate::isolation::opencode_acp_level(config, isolator);
    Some(isolation(config, isolator, Some(level)))
}

/// The name of the built-in ACP executor that runs `opencode acp` per task.
pub(crate) const OPENCODE_ACP: &str = "opencode-acp";

/// `opencode acp`, one process per task confined at the `opencode` executor's level, with the
/// managed server's program, environment and config — except that OpenCode asks before every
/// tool, so Handoff's rules, hooks and approvals decide (as they do for the shared server,
/// which gets them per session).
pub(crate) fn opencode_acp_config(
    config: &Config,
    binary: &str,
    env: &[(String, String)],
    isolation: Option<Isolation>,
) -> AcpConfig {
    let settings = &config.executors.opencode;
    let mut inline = inline_config(config);
    inline["permission"] = serde_json::json!({ "*": "ask" });
    let (mut inline, model) = crate::opencode_gateway::with_gateway(config, OPENCODE_ACP, inline);
    if let Some(model) = &model {
        inline["model"] = serde_json::json!(model);
    }
    let env = with_inline_config(env, &inline);
    AcpConfig {
        name: OPENCODE_ACP.to_owned(),
        argv: vec![binary.to_owned(), "acp".to_owned()],
        env,
        isolation,
        pool: Some(pool_settings(config, settings.pool)),
        homes: Some(opencode_homes(config, OPENCODE_ACP)),
        mcp_servers: Vec::new(),
    }
}

/// `opencode run`'s environment and model: the managed server's, with the gateway's provider
/// in its inline config when the gateway serves it.
fn opencode_cli_env(
    config: &Config,
    env: &[(String, String)],
) -> (Vec<(String, String)>, Option<String>) {
    let name = handoff_runner::OPENCODE_CLI;
    if !config.models.serves(name) {
        return (env.to_vec(), config.executors.opencode.model.clone());
    }
    let (inline, model) =
        crate::opencode_gateway::with_gateway(config, name, inline_config(config));
    (with_inline_config(env, &inline), model)
}

/// `env` with `inline` as OpenCode's inline config in place of the one it had.
fn with_inline_config(
    env: &[(String, String)],
    inline: &serde_json::Value,
) -> Vec<(String, String)> {
    env.iter()
        .filter(|(k, _)| k != "OPENCODE_CONFIG_CONTENT")
        .cloned()
        .chain([("OPENCODE_CONFIG_CONTENT".to_owned(), inline.to_string())])
        .collect()
}

/// `executors.opencode.config` as a JSON object (empty when unset).
fn inline_config(config: &Config) -> serde_json::Value {
    config
        .executors
        .opencode
        .config_json
        .as_deref()
        .and_then(|json| serde_json::from_str::<serde_json::Value>(json).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::json!({}))
}

/// A pool of `size` agents in the workspace; their warm-up session runs in place unless task
/// directories become git worktrees (which happens after the agent started).
fn pool_settings(config: &Config, size: usize) -> PoolSettings {
    PoolSettings {
        size,
        root: absolute(&config.workspace_dir),
        warm_in_place: config.tasks.git_repository.is_none(),
    }
}

/// Registers the ACP agent `agent`, or notes it as missing when its program is not found.
fn acp_executor(
    registry: &mut ExecutorRegistry,
    notes: &mut Vec<String>,
    agent: &AcpExecutorConfig,
    isolation: Option<Isolation>,
    pool: PoolSettings,
) -> Result<Option<Arc<AcpExecutor>>, RunnerError> {
    let program = agent.argv.first().map_or("", String::as_str);
    let Some(binary) = find_program(program) else {
        let how = format!(
            "install `{program}` or fix executors.acp.{}.argv",
            agent.name
        );
        notes.push(format!(
            "{}: `{program}` not found on PATH ({how})",
            agent.name
        ));
        registry.mark_missing(&agent.name, how);
        return Ok(None);
    };
    let mut argv = agent.argv.clone();
    argv[0] = binary.to_string_lossy().into_owned();
    let executor = Arc::new(AcpExecutor::new(AcpConfig {
        name: agent.name.clone(),
        argv,
        env: agent.env.clone(),
        isolation,
        pool: Some(pool),
        homes: None,
        mcp_servers: agent.mcp_servers.clone(),
    })?);
    registry.register(executor.clone());
    Ok(Some(executor))
}

fn command_config(config: &CommandExecutorConfig, isolation: Option<Isolation>) -> CommandConfig {
    CommandConfig {
        argv: config.argv.clone(),
        prompt_via: match config.prompt_via {
            handoff_config::PromptVia::Stdin => PromptVia::Stdin,
            handoff_config::PromptVia::Argument => PromptVia::Argument,
        },
        messages_via_stdin: config.messages_via_stdin,
        env: Vec::new(),
        message_format: Default::default(),
        isolation,
    }
}

/// The server to use: the configured URL, else a managed one when the program exists.
fn opencode_server(config: &Config) -> Option<OpenCodeServer> {
    let settings: &OpenCodeExecutorConfig = &config.executors.opencode;
    if let Some(url) = &settings.url {
        return Some(OpenCodeServer::Attached {
            url: url.clone(),
            password: settings.password.as_ref().map(|p| p.expose().to_owned()),
        });
    }
    let binary = find_program(&settings.binary)?;
    let mut env = vec![
        ("OPENCODE_DISABLE_AUTOUPDATE".to_owned(), "1".to_owned()),
        // A task's repository is untrusted: its own opencode.json must not widen permissions.
        ("OPENCODE_DISABLE_PROJECT_CONFIG".to_owned(), "1".to_owned()),
    ];
    if let Some(json) = &settings.config_json {
        env.push(("OPENCODE_CONFIG_CONTENT".to_owned(), json.clone()));
    }
    // The server is shared by every task, so it cannot be sandboxed per task; at `process` and
    // above it still starts from the allow-listed environment, so the agent's shell never sees
    // Handoff's own secrets.
    let level = settings.isolation.unwrap_or(config.runner.isolation);
    let inherit = (level >= IsolationLevel::Process).then(|| {
        EnvPolicy::new(config.runner.env_allow.iter().cloned())
            .filter(std::env::vars_os())
            .into_iter()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect()
    });
    Some(OpenCodeServer::Managed {
        binary: binary.to_string_lossy().into_owned(),
        env,
        inherit,
        cwd: config.workspace_dir.clone(),
        state_file: config.data_dir.join("opencode-server.json"),
    })
}

fn opencode_config(config: &Config, server: OpenCodeServer) -> OpenCodeConfig {
    let settings = &config.executors.opencode;
    OpenCodeConfig {
        server,
        model: settings.model.clone(),
        retry_max_attempts: settings.retry_max_attempts,
        retry_max: settings.retry_max,
        delete_sessions: settings.delete_sessions,
        // Handoff's rules have OpenCode's shape and semantics (last match wins).
        ruleset: serde_json::to_value(&config.executors.permissions.rules)
            .unwrap_or(serde_json::Value::Array(Vec::new())),
    }
}
