//! Where each agent process keeps its own state: the homes of the OpenCode, Claude Code and
//! Codex executors (what variables point into a home, what of the user's own configuration is
//! copied in). The homes themselves are `handoff_runner::AgentHomes`'; this only decides them
//! from the configuration and Handoff's environment.

use std::path::{Path, PathBuf};

use handoff_config::Config;
use handoff_runner::AgentHomes;

/// Each OpenCode agent process (`opencode acp`, `opencode run`) of executor `executor` keeps
/// everything it writes in a home of its own: its database (every session it ran), logs and
/// cache. So no task's shell reads another task's conversation, and nothing one task plants
/// (a provider package in the cache) is loaded by another's agent. Copied in: the user's
/// provider credentials (`opencode auth login`; not when the model gateway serves the
/// executor) and OpenCode's cache (what the user's own OpenCode downloaded; a run's own
/// downloads go with its home).
pub(crate) fn opencode_homes(config: &Config, executor: &str) -> AgentHomes {
    // Through the gateway an agent needs no credential of the user's: none is copied in.
    let served = config.models.serves(executor);
    let credentials = xdg_dir("XDG_DATA_HOME", ".local/share")
        .filter(|_| !served)
        .map(|data| {
            (
                data.join("opencode/auth.json"),
                PathBuf::from("data/opencode/auth.json"),
            )
        });
    let cache = xdg_dir("XDG_CACHE_HOME", ".cache")
        .map(|cache| (cache.join("opencode"), PathBuf::from("cache/opencode")));
    AgentHomes {
        root: homes_root(config, executor),
        vars: xdg_homes().collect(),
        seed: credentials.into_iter().chain(cache).collect(),
    }
}

/// What an agent writes outside its own config directory goes into its home too: caches,
/// logs, state (the variables, and their subdirectories of the home).
fn xdg_homes() -> impl Iterator<Item = (String, String)> {
    [
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
    ]
    .into_iter()
    .map(|(var, sub)| (var.to_owned(), sub.to_owned()))
}

/// Each Claude Code run keeps its state in a home of its own (`CLAUDE_CONFIG_DIR`): its
/// transcripts, the shell snapshots every Bash step sources, todos — so no task reads another's
/// conversation or plants a script another's agent runs. Copied in from the user's
/// configuration (`$CLAUDE_CONFIG_DIR` or `~/.claude`, and `~/.claude.json`): credentials,
/// settings, memory, agents, commands, skills; never its transcripts.
pub(crate) fn claude_homes(config: &Config) -> AgentHomes {
    let own = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let source = own
        .clone()
        .or_else(|| home.as_ref().map(|h| h.join(".claude")));
    // Claude Code keeps its global settings beside the config directory it was given, or in
    // the home directory.
    let global = match (&own, &home) {
        (Some(dir), _) => Some(dir.join(".claude.json")),
        (None, Some(home)) => Some(home.join(".claude.json")),
        (None, None) => None,
    }
    .map(|file| (file, PathBuf::from("claude/.claude.json")));
    // Through the gateway Claude Code needs no credential of the user's: none is copied in.
    let credentials =
        (!config.models.serves(handoff_runner::CLAUDE)).then_some(".credentials.json");
    let kept: Vec<&str> = credentials
        .into_iter()
        .chain([
            "settings.json",
            "CLAUDE.md",
            "agents",
            "commands",
            "skills",
            "output-styles",
        ])
        .collect();
    config_homes(
        config,
        (handoff_runner::CLAUDE, "CLAUDE_CONFIG_DIR"),
        source,
        &kept,
        global,
    )
}

/// Each Codex run keeps its state in a home of its own (`CODEX_HOME`): its sessions (every
/// thread it ran), history and logs. Copied in from `executors.codex.home` (or `$CODEX_HOME`,
/// or `~/.codex`): its config, credentials, instructions, prompts, skills and rules; never its
/// sessions.
pub(crate) fn codex_homes(config: &Config) -> AgentHomes {
    let source = config
        .executors
        .codex
        .home
        .as_deref()
        .map(absolute)
        .or_else(|| {
            std::env::var_os("CODEX_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        })
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")));
    // Through the gateway Codex needs no credential of the user's: none is copied in.
    let credentials = (!config.models.serves(handoff_runner::CODEX)).then_some("auth.json");
    let kept: Vec<&str> = ["config.toml"]
        .into_iter()
        .chain(credentials)
        .chain([
            "AGENTS.md",
            "AGENTS.override.md",
            "prompts",
            "skills",
            "rules",
        ])
        .collect();
    config_homes(
        config,
        (handoff_runner::CODEX, "CODEX_HOME"),
        source,
        &kept,
        None,
    )
}

/// The homes of an agent whose own directory variable (`agent`: the executor's name, which
/// also names the home's subdirectory, and the variable) points into the home, beside
/// [`xdg_homes`]; seeded with the entries `kept` of the user's directory `source`, and `extra`.
fn config_homes(
    config: &Config,
    agent: (&str, &str),
    source: Option<PathBuf>,
    kept: &[&str],
    extra: Option<(PathBuf, PathBuf)>,
) -> AgentHomes {
    let (executor, var) = agent;
    let seed = source
        .iter()
        .flat_map(|dir| {
            kept.iter()
                .map(move |name| (dir.join(name), Path::new(executor).join(name)))
        })
        .chain(extra)
        .collect();
    AgentHomes {
        root: homes_root(config, executor),
        vars: std::iter::once((var.to_owned(), executor.to_owned()))
            .chain(xdg_homes())
            .collect(),
        seed,
    }
}

/// Where the homes of `executor`'s agents are made.
fn homes_root(config: &Config, executor: &str) -> PathBuf {
    absolute(&config.data_dir.join("agent-homes").join(executor))
}

/// `path` made absolute against the working directory (binds and stored task directories
/// must not depend on it later).
pub(crate) fn absolute(path: &std::path::Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// An XDG base directory as Handoff's own environment (which the agent inherits) names it.
fn xdg_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
}
