//! Which model and provider tasks will use, named before the first task finds out: an
//! OpenCode without a configured model silently falls back to its hosted default, which fails
//! offline only after a minute and a half of retries.

use std::path::{Path, PathBuf};

use handoff_config::Config;
use serde_json::Value;

use super::Check;

/// Built-in OpenCode providers and the environment variable each reads its key from.
const KEYED_PROVIDERS: &[(&str, &str)] = &[
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("openai", "OPENAI_API_KEY"),
    ("openrouter", "OPENROUTER_API_KEY"),
    ("google", "GOOGLE_GENERATIVE_AI_API_KEY"),
    ("groq", "GROQ_API_KEY"),
    ("mistral", "MISTRAL_API_KEY"),
    ("deepseek", "DEEPSEEK_API_KEY"),
    ("xai", "XAI_API_KEY"),
];

/// What `handoff init` writes and the docs explain.
const OPENCODE_FIX: &str = "set executors.opencode.model (provider/model) and that provider in \
     executors.opencode.config (`handoff init` writes a commented example; docs/configuration.md)";

/// The model check for the executor tasks default to.
pub(super) fn task_model(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Check {
    let executor = config.tasks.default_executor.as_str();
    match executor {
        handoff_runner::OPENCODE
        | handoff_runner::OPENCODE_CLI
        | crate::executors::OPENCODE_ACP => opencode(config, env),
        handoff_runner::CLAUDE => {
            let model = config
                .executors
                .claude
                .model
                .as_deref()
                .unwrap_or("Claude Code's own default model");
            let endpoint =
                env("ANTHROPIC_BASE_URL").unwrap_or_else(|| "the Anthropic API".to_owned());
            let keyed = [
                "ANTHROPIC_API_KEY",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "ANTHROPIC_AUTH_TOKEN",
            ]
            .iter()
            .find(|name| env(name).is_some());
            match keyed {
                Some(name) => Check::pass(
                    "task model",
                    format!("claude: {model} at {endpoint} (credentials from {name})"),
                ),
                None => Check::fail(
                    "task model",
                    true,
                    format!("claude: {model} at {endpoint}, but no credentials are set"),
                    "set ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN) in Handoff's environment",
                ),
            }
        }
        handoff_runner::CODEX => Check::pass(
            "task model",
            format!(
                "codex: {} (provider and key from Codex's config.toml in {})",
                config
                    .executors
                    .codex
                    .model
                    .as_deref()
                    .unwrap_or("the model of Codex's own config"),
                config
                    .executors
                    .codex
                    .home
                    .as_ref()
                    .map_or_else(|| "CODEX_HOME".to_owned(), |h| h.display().to_string())
            ),
        ),
        other => Check::pass(
            "task model",
            format!("`{other}` runs its own program; Handoff picks no model for it"),
        ),
    }
}

/// OpenCode's model: the setting, else the `model` of its inline config, else of the user's
/// own OpenCode config file (which the server Handoff starts reads too).
fn opencode(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Check {
    let settings = &config.executors.opencode;
    let mut layers: Vec<Value> = settings
        .config_json
        .as_deref()
        .and_then(|json| serde_json::from_str(json).ok())
        .into_iter()
        .collect();
    layers.extend(user_config(env));
    let model = settings.model.clone().or_else(|| {
        layers
            .iter()
            .find_map(|c| c.get("model").and_then(Value::as_str))
            .map(str::to_owned)
    });
    if settings.url.is_some() && model.is_none() {
        return Check::pass(
            "task model",
            "opencode: the attached server's own default model (executors.opencode.url)",
        );
    }
    let Some(model) = model else {
        return Check::fail(
            "task model",
            true,
            "opencode: no model set — OpenCode falls back to its hosted default, which needs \
             internet and an account (offline, each task fails after ~86 s: \"Cannot connect to \
             API\")",
            OPENCODE_FIX,
        );
    };
    let Some((provider, _)) = model.split_once('/') else {
        return Check::fail(
            "task model",
            true,
            format!("opencode: model `{model}` is not provider/model"),
            OPENCODE_FIX,
        );
    };
    provider_check(&model, provider, &layers, env)
}

/// Whether `provider` of `model` is defined by one of the OpenCode config `layers`, or is a
/// built-in one whose key is set.
fn provider_check(
    model: &str,
    provider: &str,
    layers: &[Value],
    env: &dyn Fn(&str) -> Option<String>,
) -> Check {
    let configured = layers
        .iter()
        .find_map(|c| c.pointer(&format!("/provider/{}", pointer_escape(provider))));
    if let Some(entry) = configured {
        let at = entry
            .pointer("/options/baseURL")
            .and_then(Value::as_str)
            .map(|url| format!(" at {url}"))
            .unwrap_or_default();
        let package = entry
            .get("npm")
            .and_then(Value::as_str)
            .map(|npm| format!(" ({npm})"))
            .unwrap_or_default();
        return Check::pass(
            "task model",
            format!("opencode: {model} through provider `{provider}`{package}{at}"),
        );
    }
    match KEYED_PROVIDERS.iter().find(|(name, _)| *name == provider) {
        Some((_, key)) if env(key).is_some() => Check::pass(
            "task model",
            format!("opencode: {model} through OpenCode's built-in `{provider}` (key from {key})"),
        ),
        Some((_, key)) => Check::fail(
            "task model",
            true,
            format!(
                "opencode: {model} through OpenCode's built-in `{provider}`, but {key} is not set"
            ),
            format!(
                "set {key} in Handoff's environment and list it in runner.env_allow (executors \
                 start from an allow-listed environment)"
            ),
        ),
        None => Check::fail(
            "task model",
            true,
            format!(
                "opencode: {model} names provider `{provider}`, which the OpenCode config does not define"
            ),
            OPENCODE_FIX,
        ),
    }
}

/// The user's OpenCode config file: `OPENCODE_CONFIG`, else `opencode.json` (or `config.json`)
/// under `$XDG_CONFIG_HOME/opencode` or `~/.config/opencode`. A file that is not plain JSON
/// (JSONC with comments) is skipped: the check then says no model was found.
fn user_config(env: &dyn Fn(&str) -> Option<String>) -> Option<Value> {
    let mut candidates: Vec<PathBuf> = env("OPENCODE_CONFIG")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    let dir = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".config")))
        .map(|base| base.join("opencode"));
    if let Some(dir) = dir {
        candidates.extend(["opencode.json", "config.json"].map(|name| dir.join(name)));
    }
    candidates
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .find_map(|text| serde_json::from_str(&text).ok())
}

/// The completion judge's model, when a policy needs one.
pub(super) fn judge_model(config: &Config) -> Option<Check> {
    use handoff_task::CompletionPolicy;
    let needs = matches!(
        config.completion.policy,
        CompletionPolicy::Judge | CompletionPolicy::Manager
    );
    let evaluator = &config.evaluator;
    match (&evaluator.provider, &evaluator.model) {
        (Some(provider), Some(model)) => {
            let at = evaluator
                .base_url
                .as_deref()
                .map(|url| format!(" at {url}"))
                .unwrap_or_default();
            Some(Check::pass(
                "judge model",
                format!("{model} through {}{at}", provider.as_str()),
            ))
        }
        _ if needs => Some(Check::fail(
            "judge model",
            true,
            "completion.policy needs a judge, but evaluator.provider or evaluator.model is unset",
            "set evaluator.provider and evaluator.model (and its key: evaluator.api_key_env)",
        )),
        _ => None,
    }
}

/// A JSON pointer segment for `key`.
fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_config::config;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn an_opencode_without_a_model_is_named_as_the_hosted_fallback() {
        let check = task_model(&config(&[]), &no_env);
        assert!(!check.ok && check.required, "{check:?}");
        assert!(check.detail.contains("hosted default"), "{check:?}");
        assert!(check.fix.unwrap().contains("handoff init"));
    }

    #[test]
    fn a_configured_provider_is_named_with_its_endpoint() {
        let inline = r#"{"provider":{"mock":{"npm":"@ai-sdk/openai-compatible","options":{"baseURL":"http://127.0.0.1:9/v1"}}},"model":"mock/m1"}"#;
        let check = task_model(&config(&[("HANDOFF_OPENCODE_CONFIG", inline)]), &no_env);
        assert!(check.ok, "{check:?}");
        assert_eq!(
            check.detail,
            "opencode: mock/m1 through provider `mock` (@ai-sdk/openai-compatible) at http://127.0.0.1:9/v1"
        );
        // The setting wins over the inline config's model, and must name a known provider.
        let other = task_model(
            &config(&[
                ("HANDOFF_OPENCODE_CONFIG", inline),
                ("HANDOFF_OPENCODE_MODEL", "nowhere/m2"),
            ]),
            &no_env,
        );
        assert!(!other.ok && other.detail.contains("`nowhere`"), "{other:?}");
    }

    #[test]
    fn the_users_own_opencode_config_names_the_model() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".config/opencode");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("opencode.json"),
            r#"{"model":"local/qwen","provider":{"local":{"options":{"baseURL":"http://127.0.0.1:9/v1"}}}}"#,
        )
        .unwrap();
        let path = home.path().display().to_string();
        let check = task_model(&config(&[]), &|name| (name == "HOME").then(|| path.clone()));
        assert!(check.ok, "{check:?}");
        assert!(
            check.detail.contains("local/qwen through provider `local`"),
            "{check:?}"
        );
    }

    #[test]
    fn a_built_in_provider_needs_its_key() {
        let env = config(&[("HANDOFF_OPENCODE_MODEL", "anthropic/claude-sonnet-4-5")]);
        let missing = task_model(&env, &no_env);
        assert!(!missing.ok, "{missing:?}");
        assert!(missing.detail.contains("ANTHROPIC_API_KEY is not set"));
        let keyed = task_model(&env, &|name| {
            (name == "ANTHROPIC_API_KEY").then(|| "sk-1".to_owned())
        });
        assert!(keyed.ok, "{keyed:?}");
        assert!(!keyed.detail.contains("sk-1"));
    }

    #[test]
    fn the_command_executor_needs_no_model_and_a_judge_policy_needs_one() {
        let command = config(&[
            ("HANDOFF_DEFAULT_EXECUTOR", "command"),
            ("HANDOFF_COMMAND_ARGV", r#"["true"]"#),
        ]);
        assert!(task_model(&command, &no_env).ok);
        assert!(judge_model(&command).is_none());
        // A configured judge is named with its endpoint.
        let judged = config(&[
            ("HANDOFF_EVALUATOR_PROVIDER", "openai_compatible"),
            ("HANDOFF_EVALUATOR_MODEL", "judge-1"),
            ("HANDOFF_EVALUATOR_BASE_URL", "http://127.0.0.1:9/v1"),
        ]);
        let judge = judge_model(&judged).unwrap();
        assert!(judge.ok, "{judge:?}");
        assert_eq!(
            judge.detail,
            "judge-1 through openai_compatible at http://127.0.0.1:9/v1"
        );
    }
}
