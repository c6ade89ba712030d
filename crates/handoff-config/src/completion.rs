//! Settings of completion verification and of the evaluator's LLM.

use std::time::Duration;

use handoff_llm::{LlmConfig, Pricing, Provider};
use handoff_task::{CompletionBudget, CompletionPolicy};

use crate::{Secret, parse::FromRaw};

/// How tasks are verified by default (each `execute_task` may override).
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionConfig {
    /// The default policy.
    pub policy: CompletionPolicy,
    /// Commands every task's result must pass (run in the task directory, confined like it).
    pub verify_commands: Vec<String>,
    /// Cycles at most.
    pub max_cycles: u32,
    /// A judge's "done" needs at least this confidence.
    pub min_confidence: f64,
    /// Default caps.
    pub budget: CompletionBudget,
    /// Longest one verify command may run (the task's deadline and wall budget bound it too).
    pub verify_timeout: Duration,
    /// Longest one verify command runs before the run, to count its tests (zero: not run).
    pub verify_before: Duration,
    /// Files the coder must not change (besides the verify scripts and the files they name).
    pub protected_paths: Vec<String>,
}

/// The evaluator's model (judge and manager); unset provider = no judge available.
#[derive(Debug, Clone)]
pub struct EvaluatorConfig {
    /// Wire format.
    pub provider: Option<Provider>,
    /// Model name.
    pub model: Option<String>,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
    /// The key, read from `api_key_env` at start-up.
    pub api_key: Option<Secret>,
    /// Endpoint override.
    pub base_url: Option<String>,
    /// Bound on one call.
    pub timeout: Duration,
    /// Retries on 408/429/5xx.
    pub max_retries: u32,
    /// Prices per million tokens, when known.
    pub pricing: Option<Pricing>,
}

impl EvaluatorConfig {
    /// The client settings, when a provider and model are configured.
    pub fn llm(&self) -> Option<LlmConfig> {
        let provider = self.provider?;
        let model = self.model.clone()?;
        Some(LlmConfig {
            api_key: self.api_key.as_ref().map(|k| k.expose().to_owned()),
            base_url: self.base_url.clone(),
            timeout: self.timeout,
            max_retries: self.max_retries,
            pricing: self.pricing,
            ..LlmConfig::new(provider, model)
        })
    }
}

impl FromRaw for CompletionPolicy {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(CompletionPolicy::None),
            "checks" => Ok(CompletionPolicy::Checks),
            "judge" => Ok(CompletionPolicy::Judge),
            "manager" => Ok(CompletionPolicy::Manager),
            other => Err(format!(
                "`{other}` is not one of none, checks, judge, manager"
            )),
        }
    }
}

impl FromRaw for Provider {
    fn from_text(text: &str) -> Result<Self, String> {
        Provider::parse(text.trim()).ok_or_else(|| {
            format!(
                "`{text}` is not one of anthropic, openai, openai_responses, gemini, openai_compatible (xai, local)"
            )
        })
    }
}

/// A list of shell commands: a JSON array, or one command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commands(pub Vec<String>);

impl FromRaw for Commands {
    fn from_text(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        if trimmed.starts_with('[') {
            serde_json::from_str(trimmed)
                .map(Commands)
                .map_err(|e| format!("expected a JSON array of commands: {e}"))
        } else if trimmed.is_empty() {
            Ok(Commands::default())
        } else {
            Ok(Commands(vec![trimmed.to_owned()]))
        }
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::String(s) => Self::from_text(s),
            // An array is read like every other list of strings.
            other => Vec::<String>::from_toml(other).map(Commands),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_a_json_array_or_one_command() {
        assert_eq!(
            Commands::from_text(r#"["cargo test", "a, b"]"#).unwrap().0,
            ["cargo test", "a, b"]
        );
        assert_eq!(
            Commands::from_text("make check, lint").unwrap().0,
            ["make check, lint"]
        );
        assert!(Commands::from_text("[oops").is_err());
        let toml: toml::Value = toml::from_str(r#"c = ["make check, lint", "x"]"#).unwrap();
        let from_file = Commands::from_toml(toml.get("c").unwrap()).unwrap();
        assert_eq!(from_file.0, ["make check, lint", "x"]);
        let one: toml::Value = toml::from_str(r#"c = "make check, lint""#).unwrap();
        assert_eq!(
            Commands::from_toml(one.get("c").unwrap()).unwrap().0,
            ["make check, lint"]
        );
    }

    #[test]
    fn policies_and_providers_parse_with_clear_errors() {
        assert_eq!(
            CompletionPolicy::from_text("Judge").unwrap(),
            CompletionPolicy::Judge
        );
        assert!(
            CompletionPolicy::from_text("maybe")
                .unwrap_err()
                .contains("none, checks")
        );
        assert_eq!(
            Provider::from_text("xai").unwrap(),
            Provider::OpenaiCompatible
        );
        assert!(Provider::from_text("bard").is_err());
    }
}
