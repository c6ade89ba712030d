//! The commented `handoff.toml` that `handoff init` writes, rendered from the settings table:
//! every setting at its default, commented out, and a worked provider example.

use std::fmt::Write as _;

use crate::{
    SettingSpec,
    init_provider::InitProvider,
    sections::{UNSET, defaults, sections, split_key},
};

/// The line that opens an example block; the lines up to [`EXAMPLE_END`] uncomment together.
pub const EXAMPLE_BEGIN: &str = "# --- Example:";
/// The line that closes an example block.
pub const EXAMPLE_END: &str = "# --- end of example";

const WIDTH: usize = 98;

const HEADER: &str = "\
# handoff.toml: Handoff's configuration, written by `handoff init`.
#
# Every setting is listed at its default, commented out: uncomment a line and change its value.
# \"(unset)\" marks a setting with no default; give it a value to set it. Precedence, highest
# first: command-line flags > environment variables > .env > this file > defaults. Check the
# result with `handoff config --config <this file>` (every effective value and where it came
# from, secrets masked). Reference: docs/configuration.md in Handoff's repository.
#
# This file may hold secrets (tokens, passwords), so `handoff init` makes it readable by its
# owner only (mode 0600); keep it that way.
#
# The blocks between \"# --- Example:\" and \"# --- end of example\" are worked examples: remove
# the leading \"# \" of every line inside a block to use it (the same keys above stay commented).
";

/// A worked example shown at the end of a table's settings.
struct Example {
    table: &'static str,
    title: &'static str,
    lines: Vec<String>,
}

/// The provider examples, with `provider`'s values.
fn examples(provider: &InitProvider) -> [Example; 2] {
    [
        Example {
            table: "models",
            title: "a model provider for every task, through Handoff's model gateway: an \
                    OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, LM Studio or a hosted \
                    /v1 API) and its model. Only Handoff reads the key (from the variable \
                    provider_key_env names); each task's agent gets the gateway's URL and a token \
                    of its own, and every call is counted and capped per task. Without a \
                    provider OpenCode falls back to its own settings. `handoff init --provider \
                    URL --model NAME [--key-env VAR]` writes these lines for you.",
            lines: provider.models_lines(),
        },
        Example {
            table: "evaluator",
            title: "the judge on the same OpenAI-compatible endpoint. It judges the tasks that \
                    ask for it (execute_task {completion: {policy: \"judge\"}}), or every task \
                    with completion.policy = \"judge\".",
            lines: provider.evaluator_lines(),
        },
    ]
}

/// The whole commented `handoff.toml`, with the provider examples commented out.
pub fn init_toml() -> String {
    render(None)
}

/// The commented `handoff.toml` with `provider` set: its examples are written as settings.
pub fn init_toml_with_provider(provider: &InitProvider) -> String {
    render(Some(provider))
}

fn render(provider: Option<&InitProvider>) -> String {
    let defaults = defaults();
    let example = InitProvider::example();
    let examples = examples(provider.unwrap_or(&example));
    let mut out = String::from(HEADER);
    for section in sections() {
        out.push('\n');
        comment(&mut out, section.about);
        if !section.table.is_empty() {
            let _ = writeln!(out, "[{}]", section.table);
        }
        for spec in &section.settings {
            let (_, name) = split_key(spec.key);
            let default = defaults.get(spec.key).map_or(UNSET, String::as_str);
            let value = toml_literal(default).unwrap_or_else(|| UNSET.to_owned());
            let line = format!("# {name} = {value}");
            setting(&mut out, spec, &line);
        }
        for example in examples.iter().filter(|e| e.table == section.table) {
            write_example(&mut out, example, provider.is_some());
        }
    }
    out
}

/// An example block: commented out, or written as settings when `init` was given a provider.
fn write_example(out: &mut String, example: &Example, given: bool) {
    out.push('\n');
    if given {
        comment(
            out,
            &format!("Written by `handoff init --provider`: {}", example.title),
        );
        for line in &example.lines {
            let _ = writeln!(out, "{line}");
        }
        return;
    }
    comment(out, &format!("Example: {}", example.title));
    let _ = writeln!(
        out,
        "{EXAMPLE_BEGIN} uncomment every line down to \"{EXAMPLE_END}\""
    );
    for line in &example.lines {
        let _ = writeln!(out, "# {line}");
    }
    let _ = writeln!(out, "{EXAMPLE_END}");
}

/// A setting's description and environment names, then its line.
fn setting(out: &mut String, spec: &SettingSpec, line: &str) {
    out.push('\n');
    comment(out, spec.doc);
    let names: Vec<&str> = spec.env.iter().map(|alias| alias.name).collect();
    let secret = if spec.secret { " Secret." } else { "" };
    comment(out, &format!("Environment: {}.{secret}", names.join(", ")));
    let _ = writeln!(out, "{line}");
}

/// Writes `text` as `# ` comment lines wrapped at [`WIDTH`].
fn comment(out: &mut String, text: &str) {
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() > 1 && line.len() + 1 + word.len() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

/// A default as `handoff config` shows it, as a TOML value that resolves to the same default;
/// `None` for a setting with no default.
fn toml_literal(shown: &str) -> Option<String> {
    if shown == UNSET {
        return None;
    }
    if shown == "true" || shown == "false" || shown.parse::<i64>().is_ok() {
        return Some(shown.to_owned());
    }
    if shown.contains('.') && shown.parse::<f64>().is_ok_and(f64::is_finite) {
        return Some(shown.to_owned());
    }
    if shown.starts_with('[') || shown.starts_with('{') {
        if let Ok(json) = serde_json::from_str::<serde_json::Value>(shown)
            && let Ok(value) = toml::Value::try_from(json)
        {
            return Some(value.to_string());
        }
        // A list of words, shown as `[a, b]`.
        if let Some(inner) = shown.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            let items: Vec<toml::Value> = inner
                .split(", ")
                .filter(|item| !item.is_empty())
                .map(|item| toml::Value::String(item.to_owned()))
                .collect();
            return Some(toml::Value::Array(items).to_string());
        }
    }
    Some(toml::Value::String(shown.to_owned()).to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{Config, LoadOptions, SETTINGS, Source};

    fn load(text: &str) -> Result<Config, crate::ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("handoff.toml");
        std::fs::write(&path, text).unwrap();
        Config::load(LoadOptions {
            config_file: Some(path),
            ..LoadOptions::default()
        })
    }

    /// Removes the `# ` of every line inside the example blocks.
    fn with_examples(text: &str) -> String {
        let mut inside = false;
        let mut out = String::new();
        for line in text.lines() {
            if line.starts_with(EXAMPLE_BEGIN) {
                inside = true;
            } else if line == EXAMPLE_END {
                inside = false;
            } else if inside {
                out.push_str(line.strip_prefix("# ").unwrap_or(line));
                out.push('\n');
                continue;
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    #[test]
    fn the_written_file_loads_and_sets_nothing() {
        let config = load(&init_toml()).unwrap();
        for setting in &config.effective {
            assert_eq!(setting.source, Source::Default, "{}", setting.key);
        }
    }

    #[test]
    fn every_setting_is_listed_once_with_its_environment_names() {
        let text = init_toml();
        for spec in SETTINGS {
            let (_, name) = split_key(spec.key);
            assert!(text.contains(&format!("\n# {name} = ")), "{}", spec.key);
            for alias in spec.env {
                assert!(text.contains(alias.name), "{}", alias.name);
            }
        }
    }

    #[test]
    fn uncommented_defaults_resolve_to_the_same_values() {
        let text = init_toml();
        let mut inside = false;
        let uncommented: String = text
            .lines()
            .map(|line| {
                inside = (inside || line.starts_with(EXAMPLE_BEGIN)) && line != EXAMPLE_END;
                (line, inside)
            })
            .map(|(line, inside)| match line.strip_prefix("# ") {
                Some(rest)
                    if !inside
                        && rest.contains(" = ")
                        && !rest.ends_with(UNSET)
                        && SETTINGS
                            .iter()
                            .any(|s| rest.starts_with(&format!("{} = ", split_key(s.key).1))) =>
                {
                    rest.to_owned()
                }
                _ => line.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let config = load(&uncommented).unwrap();
        let defaults = defaults();
        let mut from_file = BTreeMap::new();
        for setting in &config.effective {
            assert_eq!(
                Some(&setting.value),
                defaults.get(setting.key),
                "{}",
                setting.key
            );
            from_file.insert(setting.key, matches!(setting.source, Source::File { .. }));
        }
        for (key, value) in &defaults {
            assert_eq!(from_file[key], value != UNSET, "{key} not set by the file");
        }
    }

    #[test]
    fn the_provider_examples_resolve() {
        let config = load(&with_examples(&init_toml())).unwrap();
        let models = &config.models;
        assert!(models.gateway_on());
        assert_eq!(models.providers[0].url, "http://127.0.0.1:11434/v1");
        assert_eq!(models.model.as_deref(), Some("qwen2.5-coder:14b"));
        assert_eq!(config.evaluator.model.as_deref(), Some("qwen2.5-coder:14b"));
        assert_eq!(
            config.evaluator.base_url.as_deref(),
            Some("http://127.0.0.1:11434/v1")
        );
        // The judge policy accepts this evaluator.
        let judged =
            with_examples(&init_toml()).replace("# policy = \"checks\"", "policy = \"judge\"");
        assert!(load(&judged).is_ok());
    }

    #[test]
    fn a_given_provider_is_set_and_everything_else_stays_default() {
        let provider =
            InitProvider::new("http://127.0.0.1:9/v1", "coder:7b", Some("MY_PROVIDER_KEY"))
                .unwrap();
        let text = init_toml_with_provider(&provider);
        let block = format!("\n{EXAMPLE_BEGIN} uncomment");
        assert!(!text.contains(&block), "nothing left to uncomment");
        let config = load(&text).unwrap();
        assert_eq!(config.models.providers[0].url, "http://127.0.0.1:9/v1");
        assert_eq!(config.models.model.as_deref(), Some("coder:7b"));
        assert_eq!(
            config.models.providers[0].key_source,
            crate::KeySource::Env("MY_PROVIDER_KEY".to_owned())
        );
        assert_eq!(
            config.evaluator.base_url.as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(
            config.evaluator.api_key_env.as_deref(),
            Some("MY_PROVIDER_KEY")
        );
        assert!(
            config.runner.env_allow.is_empty(),
            "no task is given the key"
        );
        let from_file: std::collections::BTreeSet<&str> = config
            .effective
            .iter()
            .filter(|s| s.source != Source::Default)
            .map(|s| s.key)
            .collect();
        assert_eq!(
            from_file,
            std::collections::BTreeSet::from([
                "models.provider_url",
                "models.model",
                "models.provider_key_env",
                "evaluator.provider",
                "evaluator.model",
                "evaluator.api_key_env",
                "evaluator.base_url",
            ])
        );
    }

    #[test]
    fn defaults_become_toml_values() {
        assert_eq!(toml_literal("3500").unwrap(), "3500");
        assert_eq!(toml_literal("0.7").unwrap(), "0.7");
        assert_eq!(toml_literal("4MiB").unwrap(), "\"4MiB\"");
        assert_eq!(
            toml_literal("[localhost, ::1]").unwrap(),
            "[\"localhost\", \"::1\"]"
        );
        assert_eq!(toml_literal(UNSET), None);
    }
}
