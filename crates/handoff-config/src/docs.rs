//! `docs/configuration.md`, rendered from the settings table so the reference cannot drift from
//! what Handoff reads (a test compares the file with [`configuration_markdown`]).

use std::fmt::Write as _;

use crate::{
    SettingSpec,
    sections::{UNSET, defaults, sections},
};

/// How to bring `docs/configuration.md` up to date, quoted in the file and by its drift test.
pub const REGENERATE: &str = "UPDATE_DOCS=1 cargo test -p handoff-config docs";

const INTRO: &str = "\
One typed configuration, resolved from these layers, highest first:

1. **command-line flags**: `--config`, `--log-format`, `--log-level` (any command) and
   `handoff serve --host`, `--port`, `--data-dir`;
2. **environment variables** (the *Environment* column; the first one set wins);
3. **`.env`** in the working directory (the same variables);
4. **the TOML file**: `./handoff.toml` when present, or the file named by `--config` /
   `HANDOFF_CONFIG` (which must exist); a setting's key is its path in the file,
   `server.port` is `port` under `[server]`;
5. **the defaults** below.

An invalid value stops start-up with a message naming the variable, flag or file key it came
from; an unknown key in the TOML file is an error. `handoff config` prints every effective value
and where it came from, secrets masked (`--json` for machines): secret settings whole, and inside
JSON values (such as `HANDOFF_OPENCODE_CONFIG`) the values of secret-looking keys at any depth
(`apiKey`, `api_key`, `*token`, `password`, `secret`, `authorization`, `credentials`) and every
header value; passwords in URLs are masked too, in `config`, `doctor` and configuration errors.
The older TypeScript server's variable names (`MCP_PORT`, `RUNNER_TIMEOUT_MS`, …) still work.

`handoff init [--path P] [--force]` writes a `handoff.toml` listing every setting below at its
default, commented out, with a provider example (see the README's
[install section](../README.md#install)). `handoff init --provider URL --model NAME
[--key-env VAR]` writes the same file with that OpenAI-compatible provider set: the model
gateway's provider and model (`[models]`: every built-in agent reaches the provider through
Handoff, see [tasks.md](tasks.md#the-model-gateway)) and the judge (`evaluator.*`) on the same
model. The key itself is read from the variable when Handoff starts, by Handoff only, and never
written to the file nor given to a task.

Value forms: lists are TOML arrays in the file and comma-separated in the environment; settings
described as JSON are JSON text in the environment and a TOML array of tables (or the same JSON
in a string) in the file, e.g. `[[hooks]]` tables; sizes are bytes or `512k`, `4MiB`, `2g`;
durations are whole numbers in the unit their key names (`_ms`, `_secs`, `_days`).
";

/// The whole of `docs/configuration.md`.
pub fn configuration_markdown() -> String {
    let defaults = defaults();
    let mut out = String::new();
    out.push_str("# Configuration\n\n");
    let _ = writeln!(
        out,
        "<!-- Generated from crates/handoff-config/src/spec.rs by \
         handoff_config::configuration_markdown(); edit those, then run: {REGENERATE} -->\n"
    );
    out.push_str(INTRO);
    out.push_str("\n## Settings\n");
    for section in sections() {
        let title = if section.table.is_empty() {
            "Top level".to_owned()
        } else {
            format!("`[{}]`", section.table)
        };
        let _ = write!(out, "\n### {title}\n\n{}\n\n", section.about);
        out.push_str("| setting | environment | default | description |\n");
        out.push_str("| --- | --- | --- | --- |\n");
        for spec in &section.settings {
            let default = defaults.get(spec.key).map_or("", String::as_str);
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                spec.key,
                env_cell(spec),
                default_cell(default),
                description(spec),
            );
        }
    }
    out
}

fn env_cell(spec: &SettingSpec) -> String {
    let names: Vec<String> = spec
        .env
        .iter()
        .map(|alias| match alias.transform {
            None => format!("`{}`", alias.name),
            Some(_) => format!("`{}` (mapped)", alias.name),
        })
        .collect();
    names.join(", ")
}

fn default_cell(default: &str) -> String {
    match default {
        UNSET => "unset".to_owned(),
        "[]" => "none".to_owned(),
        value => format!("`{}`", value.replace('|', "\\|")),
    }
}

fn description(spec: &SettingSpec) -> String {
    if spec.secret {
        format!("**Secret** (masked everywhere). {}", cell(spec.doc))
    } else {
        cell(spec.doc)
    }
}

/// Escapes what would break a table row (`|`, line breaks) and, outside code spans, what
/// Markdown would read as markup (`<name>` as HTML, `*` as emphasis).
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '|' => out.push_str("\\|"),
            '\n' => out.push(' '),
            '<' if !in_code => out.push_str("&lt;"),
            '*' if !in_code => out.push_str("\\*"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SETTINGS;

    #[test]
    fn every_setting_and_env_name_is_in_the_docs() {
        let text = configuration_markdown();
        for spec in SETTINGS {
            assert!(
                text.contains(&format!("| `{}` |", spec.key)),
                "{}",
                spec.key
            );
            for alias in spec.env {
                assert!(
                    text.contains(&format!("`{}`", alias.name)),
                    "{}",
                    alias.name
                );
            }
        }
        assert!(text.contains("| `server.port` | `HANDOFF_PORT`, `MCP_PORT` | `3500` |"));
        assert!(text.contains("**Secret**"));
    }
}
