//! The `[executors]` and `[runner]` sections.

use std::{path::PathBuf, time::Duration};

use super::{Resolver, checks::*};
use crate::{
    Argv, ClaudeExecutorConfig, CodexExecutorConfig, CommandExecutorConfig, ConfigError,
    ExecutorsConfig, OpenCodeExecutorConfig, PermissionPolicy, PromptVia, RunnerConfig,
};

/// The coding agents and the command executor.
pub(super) fn executors(r: &mut Resolver) -> Result<ExecutorsConfig, ConfigError> {
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
            pool: {
                let pool = r.get("executors.opencode.pool", 1u32)?;
                r.check("executors.opencode.pool", pool, pool_size)? as usize
            },
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
        acp: r.get("executors.acp", crate::AcpExecutors::default())?,
        permissions: r.get("executors.permissions", PermissionPolicy::default())?,
        ask_timeout: Duration::from_secs(r.get("executors.ask_timeout_secs", 600u64)?),
    };

    Ok(executors)
}

/// Isolation and resource limits of task processes.
pub(super) fn runner(r: &mut Resolver) -> Result<RunnerConfig, ConfigError> {
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
        docker_retry: Some(r.get("runner.docker_retry_secs", 30u64)?)
            .filter(|secs| *secs > 0)
            .map(Duration::from_secs),
    };
    Ok(runner)
}
