//! One check per ACP agent, the built-in `opencode-acp` and each configured one: its program
//! answers `initialize`, and with which name and version.

use std::time::Duration;

use handoff_config::{AcpExecutorConfig, Config};

use super::Check;
use crate::{
    executors::{OPENCODE_ACP, opencode_acp_config},
    program::find_program,
};

/// How long an ACP agent gets to answer `initialize`: a first start sets up the agent's state
/// (OpenCode creates its database), measured at 13–35 s on a loaded 2-core machine.
const ACP_PROBE: Duration = Duration::from_secs(60);

/// Checks the built-in `opencode-acp` and every ACP agent of `config`; the default
/// executor's is required.
pub(super) async fn agents(config: &Config) -> Vec<Check> {
    let mut checks = Vec::with_capacity(config.executors.acp.0.len() + 1);
    if let Some(check) = built_in(config).await {
        checks.push(check);
    }
    for agent in &config.executors.acp.0 {
        let required = config.tasks.default_executor == agent.name;
        let program = agent.argv.first().map_or("", String::as_str);
        let fix = format!(
            "install `{program}` or fix executors.acp.{}.argv (it must speak ACP on stdio)",
            agent.name
        );
        checks.push(agent_check(config, agent, required, &fix).await);
    }
    checks
}

/// The built-in `opencode-acp` as tasks start it (`opencode acp` with Handoff's inline
/// OpenCode config), its database in a throw-away home. `None` when a configured agent takes
/// its name or OpenCode is not installed (the `opencode` check reports that).
async fn built_in(config: &Config) -> Option<Check> {
    if config
        .executors
        .acp
        .0
        .iter()
        .any(|a| a.name == OPENCODE_ACP)
    {
        return None;
    }
    let binary = find_program(&config.executors.opencode.binary)?;
    let required = config.tasks.default_executor == OPENCODE_ACP;
    let fix = "npm install -g opencode-ai@latest (or set HANDOFF_OPENCODE_BINARY); `opencode acp` must speak ACP on stdio";
    let home = match tempfile::tempdir() {
        Ok(home) => home,
        Err(e) => {
            let why = format!("no temporary home for the probe: {e}");
            return Some(Check::fail(
                &format!("acp {OPENCODE_ACP}"),
                required,
                why,
                fix,
            ));
        }
    };
    let built = opencode_acp_config(config, &binary.to_string_lossy(), &[], None);
    let mut env = built.env;
    for (var, dir) in [("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state")] {
        env.push((var.to_owned(), home.path().join(dir).display().to_string()));
    }
    let agent = AcpExecutorConfig {
        name: OPENCODE_ACP.to_owned(),
        argv: built.argv,
        env,
        isolation: None,
        pool: 0,
        mcp_servers: Vec::new(),
    };
    Some(agent_check(config, &agent, required, fix).await)
}

async fn agent_check(
    config: &Config,
    agent: &AcpExecutorConfig,
    required: bool,
    fix: &str,
) -> Check {
    let name = format!("acp {}", agent.name);
    let program = agent.argv.first().map_or("", String::as_str);
    let Some(binary) = find_program(program) else {
        return Check::fail(
            &name,
            required,
            format!("`{program}` not found on PATH"),
            fix,
        );
    };
    let mut argv = agent.argv.clone();
    argv[0] = binary.to_string_lossy().into_owned();
    // Asked in the workspace root, where tasks' directories live; `serve` makes a missing
    // root later, so a temp dir stands in until then.
    let cwd = if config.workspace_dir.is_dir() {
        config.workspace_dir.clone()
    } else {
        std::env::temp_dir()
    };
    match handoff_runner::probe_acp_agent(&argv, &agent.env, &cwd, ACP_PROBE).await {
        Ok(found) if found.protocol_version == Some(1) => Check::pass(
            &name,
            format!(
                "{} {} (ACP 1, {})",
                found.name.as_deref().unwrap_or("unnamed agent"),
                found.version.as_deref().unwrap_or("(no version)"),
                binary.display()
            ),
        ),
        Ok(found) => Check::fail(
            &name,
            required,
            format!(
                "{} answers ACP version {:?}; Handoff speaks 1",
                binary.display(),
                found.protocol_version
            ),
            "use a version of the agent that speaks ACP 1",
        ),
        Err(e) => Check::fail(&name, required, e.to_string(), fix),
    }
}
