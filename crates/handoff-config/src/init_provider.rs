//! The model provider `handoff init --provider URL --model NAME [--key-env VAR]` writes into
//! `handoff.toml`: the model gateway's provider and model (`[models]`), which every built-in
//! agent reaches through the gateway, and the completion judge on the same endpoint. The same
//! lines, commented out, are the file's worked example.

/// An OpenAI-compatible endpoint, a model it serves, and where its key is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProvider {
    url: String,
    model: String,
    key_env: Option<String>,
}

/// A provider flag of `handoff init` that cannot be written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InitProviderError {
    /// `--provider` is not an http(s) base URL.
    #[error("--provider: {0}")]
    Url(String),
    /// `--model` is empty or has characters no model name has.
    #[error("--model: {0}")]
    Model(&'static str),
    /// `--key-env` is not a variable name an executor can be given.
    #[error("--key-env: {0}")]
    KeyEnv(&'static str),
}

impl InitProvider {
    /// Checks the three flags: a base URL without credentials, a model name, a variable name.
    pub fn new(
        url: &str,
        model: &str,
        key_env: Option<&str>,
    ) -> Result<InitProvider, InitProviderError> {
        let url = url.trim();
        if !plain(url) {
            return Err(InitProviderError::Url(
                "a URL has no spaces, quotes, backslashes or control characters".into(),
            ));
        }
        crate::public_url::check(&Some(url.to_owned())).map_err(InitProviderError::Url)?;
        let model = model.trim();
        if model.is_empty() {
            return Err(InitProviderError::Model("the model name is empty"));
        }
        if !plain(model) {
            return Err(InitProviderError::Model(
                "a model name has no spaces, quotes, backslashes or control characters",
            ));
        }
        if let Some(name) = key_env {
            check_key_env(name)?;
        }
        Ok(InitProvider {
            url: crate::public_url::normalize(url.to_owned()),
            model: model.to_owned(),
            key_env: key_env.map(str::to_owned),
        })
    }

    /// The worked example of the commented file: a local Ollama server.
    pub(crate) fn example() -> InitProvider {
        InitProvider {
            url: "http://127.0.0.1:11434/v1".into(),
            model: "qwen2.5-coder:14b".into(),
            key_env: Some("OPENAI_API_KEY".into()),
        }
    }

    /// The model tasks use.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The `[models]` lines: the provider the gateway forwards to, its model, its key's
    /// variable. Every built-in agent reaches it through the gateway.
    pub(crate) fn models_lines(&self) -> Vec<String> {
        let mut lines = vec![
            format!("provider_url = {}", quoted(&self.url)),
            format!("model = {}", quoted(&self.model)),
        ];
        if let Some(name) = &self.key_env {
            lines.push(format!("provider_key_env = {}", quoted(name)));
        }
        lines
    }

    /// The `[evaluator]` lines: the judge on the same endpoint and model.
    pub(crate) fn evaluator_lines(&self) -> Vec<String> {
        let mut lines = vec![
            "provider = \"openai_compatible\"".to_owned(),
            format!("model = {}", quoted(&self.model)),
            format!("base_url = {}", quoted(&self.url)),
        ];
        if let Some(name) = &self.key_env {
            lines.push(format!("api_key_env = {}", quoted(name)));
        }
        lines
    }
}

/// No character that would need escaping in the file: the provider config sits in a TOML
/// literal string, where nothing can be escaped.
fn plain(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '\'' | '"' | '\\'))
}

/// A variable name, and not one of Handoff's or Letta's own.
fn check_key_env(name: &str) -> Result<(), InitProviderError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(InitProviderError::KeyEnv(
            "expected a variable name: letters, digits and _, not starting with a digit",
        ));
    }
    if name.starts_with("HANDOFF_") || name.starts_with("LETTA_") {
        return Err(InitProviderError::KeyEnv(
            "HANDOFF_* and LETTA_* variables are Handoff's and Letta's own; name another variable",
        ));
    }
    Ok(())
}

/// `text` as a TOML basic string.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bad_flags_are_named_and_not_echoed() {
        let url = InitProvider::new("ftp://secret-host/v1", "m", None).unwrap_err();
        assert!(url.to_string().starts_with("--provider: "), "{url}");
        let creds = InitProvider::new("http://user:pw@host/v1", "m", None).unwrap_err();
        assert!(!creds.to_string().contains("pw"), "{creds}");
        assert_eq!(
            InitProvider::new("http://h/v1", " ", None),
            Err(InitProviderError::Model("the model name is empty"))
        );
        for bad in ["a b", "it's", "a\"b", "a\\b", "a\u{1b}b"] {
            assert!(
                InitProvider::new("http://h/v1", bad, None).is_err(),
                "{bad}"
            );
        }
        assert!(InitProvider::new("http://h/a'''b", "m", None).is_err());
        for bad in ["1KEY", "MY-KEY", "", "HANDOFF_TOKEN", "LETTA_API_KEY"] {
            let error = InitProvider::new("http://h/v1", "m", Some(bad)).unwrap_err();
            assert!(
                error.to_string().starts_with("--key-env: "),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn the_lines_carry_the_values() {
        let provider =
            InitProvider::new("http://127.0.0.1:8080/v1/", "qwen3:8b", Some("MY_KEY")).unwrap();
        let models = provider.models_lines().join("\n");
        assert_eq!(
            models,
            "provider_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"qwen3:8b\"\nprovider_key_env = \"MY_KEY\""
        );
        let judge = provider.evaluator_lines().join("\n");
        assert!(judge.contains(r#"api_key_env = "MY_KEY""#), "{judge}");
        let keyless = InitProvider::new("http://h/v1", "m", None).unwrap();
        assert!(!keyless.models_lines().join("\n").contains("key"));
        assert!(!keyless.evaluator_lines().join("\n").contains("api_key_env"));
    }
}
