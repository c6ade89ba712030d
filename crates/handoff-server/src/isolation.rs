//! The host's isolation, found once at start-up, and each executor's isolation settings.

use std::{
    path::PathBuf,
    sync::{Arc, OnceLock},
};

use handoff_config::Config;
use handoff_isolation::{
    DockerProbe, EnvPolicy, HostCapabilities, IsolationConfig, IsolationLevel, Isolator, Limits,
    launch::Rlimits,
};
use handoff_runner::Isolation;

use crate::program::find_program;

/// The launcher the program embedding Handoff declared (the `handoff` binary: itself, with its
/// `isolate` subcommand).
static LAUNCHER: OnceLock<Vec<String>> = OnceLock::new();

/// Declares the command that runs the isolation launcher (program and leading arguments).
pub fn set_launcher(launcher: Vec<String>) {
    let _ = LAUNCHER.set(launcher);
}

/// The launcher that applies the confinement: the declared one, else this very program when it
/// is `handoff`, else a `handoff-isolate` beside it (tests run from target/<profile>/deps).
pub fn launcher() -> Option<Vec<String>> {
    if let Some(launcher) = LAUNCHER.get() {
        return Some(launcher.clone());
    }
    let exe = std::env::current_exe().ok()?;
    if exe.file_name().is_some_and(|n| n == "handoff") {
        return Some(vec![exe.display().to_string(), "isolate".to_owned()]);
    }
    let dir = exe.parent()?;
    // Test binaries live in target/<profile>/deps; the programs one level up.
    [dir.to_owned(), dir.parent()?.to_owned()]
        .into_iter()
        .map(|d| d.join("handoff-isolate"))
        .find(|p| p.is_file())
        .map(|p| vec![p.display().to_string()])
}

/// Probes the host and builds the isolator every executor shares. Docker is not probed here:
/// it is asked off the start-up path, and only when [`needs_docker`].
pub fn isolator(config: &Config) -> Arc<Isolator> {
    let runner = &config.runner;
    let bwrap =
        find_program(&runner.bwrap.to_string_lossy()).unwrap_or_else(|| runner.bwrap.clone());
    let host = HostCapabilities::detect_deferring_docker(&bwrap, DockerProbe::pending());
    let swept = handoff_isolation::cgroups::sweep(&host.cgroups);
    if swept > 0 {
        tracing::info!(swept, "removed task cgroups a previous run left behind");
    }
    Arc::new(Isolator::new(
        launcher().unwrap_or_default(),
        docker_client(config),
        Arc::new(host),
    ))
}

/// The `docker` client `runner.docker` names, found on `PATH`.
pub(crate) fn docker_client(config: &Config) -> PathBuf {
    let docker = &config.runner.docker;
    find_program(&docker.to_string_lossy()).unwrap_or_else(|| docker.clone())
}

/// Whether some executor runs at the container level, so the Docker engine must be asked;
/// otherwise the isolator's probe is answered at once, without running `docker`.
pub fn needs_docker(config: &Config, isolator: &Isolator) -> bool {
    let contained = levels(config, isolator)
        .iter()
        .any(|(_, level)| *level == IsolationLevel::Container);
    if !contained {
        isolator.host().docker.answer(Err(
            "not probed: no executor runs at the container level".to_owned()
        ));
    }
    contained
}

/// An executor's isolation: its own level or `runner.isolation`, and the shared settings.
pub fn isolation(
    config: &Config,
    isolator: &Arc<Isolator>,
    level: Option<IsolationLevel>,
) -> Isolation {
    let runner = &config.runner;
    Isolation {
        isolator: isolator.clone(),
        config: IsolationConfig {
            level: level.unwrap_or(runner.isolation),
            network: runner.network,
            limits: Limits {
                memory_bytes: runner.memory_limit.map(|b| b.0),
                cpu_millicores: runner
                    .cpu_limit
                    .filter(|c| *c > 0.0)
                    .map(|cores| (cores * 1000.0).round() as u64),
                pids: runner.pids_limit,
            },
            env: EnvPolicy::new(runner.env_allow.iter().cloned()),
            rlimits: Rlimits::DEFAULT,
            // Handoff's database and artifacts, the other tasks' directories and the model
            // providers' key files.
            hide: [config.data_dir.as_path(), config.workspace_dir.as_path()]
                .into_iter()
                .chain(config.models.key_files())
                .map(absolute)
                .collect(),
            writable: runner.sandbox_writable.clone(),
            image: runner.image.clone(),
        },
    }
}

fn absolute(path: &std::path::Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Every executor's level and whether this host provides it, for `health`; `false` when some
/// executor's level is unavailable (its tasks are refused, never run weaker).
pub fn summary(config: &Config, isolator: &Isolator) -> (bool, String) {
    let mut ok = true;
    let mut parts = Vec::new();
    for (executor, level) in levels(config, isolator) {
        match isolator.level(level) {
            Ok(_) => parts.push(format!("{executor}: {level}")),
            Err(why) => {
                ok = false;
                parts.push(format!("{executor}: {level} UNAVAILABLE ({why})"));
            }
        }
    }
    let host = isolator.host();
    parts.push(format!("cgroups: {}", host.cgroups.summary()));
    (ok, parts.join("; "))
}

/// `opencode-acp`'s level: the configured one, else a sandbox where this host can sandbox
/// (never below `runner.isolation`).
pub fn opencode_acp_level(config: &Config, isolator: &Isolator) -> IsolationLevel {
    agent_level(config.executors.opencode.isolation, config, isolator)
}

/// An ACP agent's level: `configured`, else a sandbox where this host can sandbox (never below
/// `runner.isolation`). An agent runs its model's commands, so its default is the safest level
/// the host offers, not the one plain commands get.
pub fn agent_level(
    configured: Option<IsolationLevel>,
    config: &Config,
    isolator: &Isolator,
) -> IsolationLevel {
    configured.unwrap_or_else(|| {
        let sandbox = IsolationLevel::Sandbox;
        if isolator.level(sandbox).is_ok() {
            config.runner.isolation.max(sandbox)
        } else {
            config.runner.isolation
        }
    })
}

/// The level each process executor runs at, ACP agents by their names.
pub fn levels(config: &Config, isolator: &Isolator) -> Vec<(String, IsolationLevel)> {
    let default = config.runner.isolation;
    let executors = &config.executors;
    let mut levels = vec![(
        "opencode-acp".to_owned(),
        opencode_acp_level(config, isolator),
    )];
    if let Some(command) = &executors.command {
        levels.push(("command".to_owned(), command.isolation.unwrap_or(default)));
    }
    levels.push((
        "opencode-cli".to_owned(),
        executors.opencode.isolation.unwrap_or(default),
    ));
    levels.push((
        "claude".to_owned(),
        executors.claude.isolation.unwrap_or(default),
    ));
    levels.push((
        "codex".to_owned(),
        executors.codex.isolation.unwrap_or(default),
    ));
    for agent in &executors.acp.0 {
        levels.push((
            agent.name.clone(),
            agent_level(agent.isolation, config, isolator),
        ));
    }
    levels
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use handoff_config::LoadOptions;
    use handoff_isolation::cgroups::CgroupSupport;

    use super::*;

    fn config() -> Config {
        Config::load(LoadOptions {
            config_file: None,
            default_config_file: None,
            dotenv_file: None,
            env: BTreeMap::new(),
            cli: Vec::new(),
        })
        .expect("the defaults resolve")
    }

    fn isolator(bwrap: Result<(PathBuf, String), String>) -> Isolator {
        let host = HostCapabilities {
            bwrap,
            landlock: false,
            seccomp: false,
            cgroups: CgroupSupport::default(),
            docker: DockerProbe::answered(Err("no engine".to_owned())),
        };
        Isolator::new(
            vec!["handoff".to_owned()],
            PathBuf::from("docker"),
            Arc::new(host),
        )
    }

    #[test]
    fn an_acp_agent_is_sandboxed_by_default_where_the_host_can_and_a_set_level_wins() {
        let config = config();
        assert_eq!(config.runner.isolation, IsolationLevel::Process);
        let sandboxing = isolator(Ok((PathBuf::from("bwrap"), "bubblewrap 0.8".to_owned())));
        let without = isolator(Err("no user namespaces".to_owned()));
        assert_eq!(
            agent_level(None, &config, &sandboxing),
            IsolationLevel::Sandbox
        );
        assert_eq!(
            agent_level(None, &config, &without),
            IsolationLevel::Process
        );
        assert_eq!(
            agent_level(Some(IsolationLevel::Process), &config, &sandboxing),
            IsolationLevel::Process
        );
        let mut configured = config.clone();
        configured.executors.acp =
            handoff_config::AcpExecutors(vec![handoff_config::AcpExecutorConfig {
                name: "claude-acp".to_owned(),
                argv: vec!["claude-agent-acp".to_owned()],
                env: Vec::new(),
                isolation: None,
                pool: 0,
                mcp_servers: Vec::new(),
            }]);
        let listed = levels(&configured, &sandboxing);
        assert!(
            listed.contains(&("claude-acp".to_owned(), IsolationLevel::Sandbox)),
            "{listed:?}"
        );
    }
}
