//! The model gateway's providers, checked as the gateway reaches them: each one's URL, with the
//! key only Handoff reads, asked for its model list — a wrong URL or a refused key shows here,
//! not as every task's first failed call.

use std::time::Duration;

use handoff_config::{Config, ModelProvider, ModelWire};

use super::Check;

/// The task model when the gateway serves `executor`: the model and the provider it goes to,
/// and where that provider's key comes from. `None` when the gateway does not serve it or
/// names no model.
pub(super) fn task_model(config: &Config, executor: &str) -> Option<Check> {
    let models = &config.models;
    if !models.serves(executor) {
        return None;
    }
    let model = crate::executors::model_through_gateway(config, executor)?;
    let asked = model
        .strip_prefix(&format!("{}/", crate::opencode_gateway::PROVIDER_ID))
        .filter(|_| crate::executors::executor_wire(executor).is_none())
        .unwrap_or(&model);
    let provider = match crate::executors::executor_wire(executor) {
        Some(wire) => models.route(wire, Some(asked)).ok().map(|(p, _)| p),
        None => models.provider_of(asked),
    };
    let Some(provider) = provider else {
        return Some(Check::fail(
            "task model",
            true,
            format!("{executor}: {model} goes to no provider of its wire"),
            "configure a provider of that wire in models.providers, or list the executor in models.direct",
        ));
    };
    Some(Check::pass(
        "task model",
        format!(
            "{executor}: {model} at {} (provider {}) through Handoff's model gateway ({})",
            provider.url,
            provider.name,
            key_words(provider)
        ),
    ))
}

/// Where `provider`'s key comes from, and whether there is one.
fn key_words(provider: &ModelProvider) -> String {
    let from = provider.key_source.describe();
    match &provider.key {
        Some(_) => format!("key from {from}"),
        None => format!("no key: {from} holds none"),
    }
}

/// Each provider answers its model list with the key the gateway sends; empty without a
/// gateway.
pub(super) async fn providers(config: &Config) -> Vec<Check> {
    let mut checks = Vec::new();
    if !config.models.gateway_on() {
        return checks;
    }
    for provider in &config.models.providers {
        checks.push(provider_check(provider).await);
    }
    checks
}

/// `provider`'s check.
async fn provider_check(provider: &ModelProvider) -> Check {
    let url = &provider.url;
    let name = &provider.name;
    let fix = "check the provider's url and its key (models.provider_* or models.providers)";
    let answer = match list_models(provider).await {
        Ok(answer) => answer,
        Err(why) => {
            let detail = format!("provider {name} at {url}: {why}");
            return Check::fail("model gateway", true, detail, fix);
        }
    };
    let status = answer.status();
    if status.is_success() {
        return Check::pass(
            "model gateway",
            format!("provider {name} at {url} answers its model list (HTTP {status})"),
        );
    }
    let why = match status.as_u16() {
        401 | 403 => format!("the provider refused the key ({})", key_words(provider)),
        _ => format!("answered HTTP {status}"),
    };
    let detail = format!("provider {name} at {url}: {why}");
    Check::fail("model gateway", true, detail, fix)
}

/// `GET …/models` the way the gateway authenticates to the provider's wire.
async fn list_models(provider: &ModelProvider) -> Result<reqwest::Response, String> {
    let client = super::http_client(Duration::from_secs(10))?;
    let key = provider.key.as_ref().map(|k| k.expose().to_owned());
    let url = &provider.url;
    let request = match provider.wire {
        ModelWire::OpenAi => {
            let request = client.get(format!("{url}/models"));
            match &key {
                Some(key) => request.bearer_auth(key),
                None => request,
            }
        }
        ModelWire::Anthropic => {
            let request = client
                .get(format!("{url}/v1/models"))
                .header("anthropic-version", "2023-06-01");
            match &key {
                Some(key) => request.header("x-api-key", key),
                None => request,
            }
        }
    };
    // reqwest's error names the URL, which holds no secret (credentials in it are refused).
    request.send().await.map_err(|e| e.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::test_config::config;

    #[test]
    fn each_agent_is_named_with_the_model_it_asks_the_gateway_for() {
        let config = config(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            ("HANDOFF_MODELS_MODEL", "m"),
            ("HANDOFF_OPENCODE_MODEL", "handoff/big"),
            ("HANDOFF_CLAUDE_MODEL", "c"),
            ("HANDOFF_MODELS_DIRECT", "codex"),
        ]);
        let detail = |executor| task_model(&config, executor).map(|c| c.detail);
        assert!(
            detail("opencode-acp")
                .unwrap()
                .starts_with("opencode-acp: handoff/big at ")
        );
        assert_eq!(
            detail("claude").unwrap(),
            "claude: c goes to no provider of its wire",
            "Claude Code speaks Anthropic's wire; the only provider speaks OpenAI's"
        );
        assert_eq!(detail("codex"), None, "kept off the gateway");
        assert_eq!(detail("opencode"), None, "the shared server is not served");
    }

    #[test]
    fn each_agent_is_named_with_the_provider_of_its_wire() {
        let providers = r#"{"claude": {"url": "http://127.0.0.1:8", "wire": "anthropic", "key_env": "CLAUDE_KEY", "model": "sonnet"}}"#;
        let config = config(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            ("HANDOFF_MODELS_PROVIDERS", providers),
            ("HANDOFF_MODELS_MODEL", "gpt"),
        ]);
        let detail = |executor| task_model(&config, executor).unwrap().detail;
        assert_eq!(
            detail("claude"),
            "claude: claude/sonnet at http://127.0.0.1:8 (provider claude) through Handoff's model gateway (no key: the variable CLAUDE_KEY holds none)"
        );
        assert!(
            detail("codex").starts_with("codex: gpt at http://127.0.0.1:9/v1 (provider default)")
        );
        assert!(detail("opencode-acp").contains("handoff/gpt at http://127.0.0.1:9/v1"));
    }
}
