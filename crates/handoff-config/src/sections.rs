//! The settings table grouped the way a TOML file holds it, with each setting's default, for the
//! generated reference (`docs/configuration.md`) and the file `handoff init` writes.

use std::collections::BTreeMap;

use crate::{Config, LoadOptions, SETTINGS, SettingSpec};

/// What `handoff config` shows for a setting nothing sets.
pub(crate) const UNSET: &str = "(unset)";

/// One TOML table of settings (`""` is the top level).
pub(crate) struct Section {
    /// The table's dotted name, e.g. `executors.opencode`.
    pub table: &'static str,
    /// What the table is about, one sentence.
    pub about: &'static str,
    /// Its settings, in the order of [`SETTINGS`].
    pub settings: Vec<&'static SettingSpec>,
}

/// What each table is about; a table missing here still renders, with no sentence.
const ABOUT: &[(&str, &str)] = &[
    (
        "",
        "Top-level keys: where Handoff keeps its data, and the hooks around tool calls and tasks.",
    ),
    (
        "server",
        "The HTTP endpoint (`/mcp`, `/health`, `/ready`, `/metrics`): binding, the Host and Origin checks, limits and timeouts.",
    ),
    (
        "auth",
        "Who a caller is: bearer tokens and their roles, and the agent of a caller that names none.",
    ),
    ("log", "Logging to stderr."),
    (
        "models",
        "The model provider tasks reach through Handoff's gateway: its URL, wire and key, and what its tokens cost.",
    ),
    (
        "store",
        "Where tasks are stored: the embedded SQLite database (the default) or a PostgreSQL server.",
    ),
    (
        "tasks",
        "The task engine: queue and concurrency, deadlines, output and artifact bounds, snapshots, working directories.",
    ),
    (
        "executors.command",
        "The `command` executor: any program, run in the task's directory.",
    ),
    (
        "executors.opencode",
        "The `opencode` executor (the default): an OpenCode server Handoff starts, or one it attaches to, and its provider.",
    ),
    (
        "executors.claude",
        "The `claude` executor: Claude Code, one process per task.",
    ),
    (
        "executors.codex",
        "The `codex` executor: Codex CLI's app server, one process per task.",
    ),
    (
        "executors",
        "What every executor may do without asking, and how long a question waits.",
    ),
    (
        "tools",
        "The pipeline around calls to Handoff's own tools: who may call what, the loop guard, output caps.",
    ),
    (
        "completion",
        "How a task is verified before it is reported completed.",
    ),
    (
        "evaluator",
        "The model that judges tasks (policies `judge` and `manager`).",
    ),
    (
        "runner",
        "Isolation and resource limits of the executors' processes.",
    ),
    (
        "letta",
        "The Letta integration: workspace memory blocks and completion notifications.",
    ),
    (
        "matrix",
        "The Matrix integration: a room per task, who is invited and who may steer from there.",
    ),
    (
        "features",
        "Switches kept from the older TypeScript server.",
    ),
];

/// The table a key lives in and its name inside it: `executors.opencode.model` →
/// (`executors.opencode`, `model`); `data_dir` → (``, `data_dir`).
pub(crate) fn split_key(key: &str) -> (&str, &str) {
    key.rsplit_once('.').unwrap_or(("", key))
}

/// Every setting grouped by table: the top level first (TOML needs its keys before any table),
/// then the tables in the order their first setting appears in [`SETTINGS`].
pub(crate) fn sections() -> Vec<Section> {
    let mut out: Vec<Section> = vec![Section {
        table: "",
        about: about(""),
        settings: Vec::new(),
    }];
    for spec in SETTINGS {
        let (table, _) = split_key(spec.key);
        match out.iter_mut().find(|s| s.table == table) {
            Some(section) => section.settings.push(spec),
            None => out.push(Section {
                table,
                about: about(table),
                settings: vec![spec],
            }),
        }
    }
    out.retain(|s| !s.settings.is_empty());
    out
}

fn about(table: &str) -> &'static str {
    ABOUT
        .iter()
        .find(|(name, _)| *name == table)
        .map_or("", |(_, about)| about)
}

/// Each setting's default as `handoff config` shows it with nothing set, so the defaults are
/// written once, where the configuration is resolved.
pub(crate) fn defaults() -> BTreeMap<&'static str, String> {
    // With no layers nothing can be invalid; an error here leaves every default blank, which
    // the drift test of docs/configuration.md would show.
    Config::load(LoadOptions::default())
        .map(|config| {
            config
                .effective
                .into_iter()
                .map(|e| (e.key, e.value))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_described_and_every_setting_placed_once() {
        let sections = sections();
        for section in &sections {
            assert!(
                !section.about.is_empty(),
                "no sentence for [{}]",
                section.table
            );
        }
        let placed: usize = sections.iter().map(|s| s.settings.len()).sum();
        assert_eq!(placed, SETTINGS.len());
        assert_eq!(sections[0].table, "");
    }

    #[test]
    fn every_setting_has_a_default() {
        let defaults = defaults();
        for spec in SETTINGS {
            assert!(defaults.contains_key(spec.key), "{}", spec.key);
        }
    }
}
