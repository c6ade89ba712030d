//! The model gateway's provider, checked as the gateway reaches it: its URL, with the key only
//! Handoff reads, asked for its model list — a wrong URL or a refused key shows here, not as
//! every task's first failed call.

use std::time::Duration;

use handoff_config::{Config, ModelWire};

use super::Check;

/// The task model when the gateway serves `executor`: the model and provider, and where the
/// key comes from. `None` when the gateway does not serve it or names no model.
pub(super) fn task_model(config: &Config, executor: &str) -> Option<Check> {
    let models = &config.models;
    let url = models
        .gateway_upstream()
        .filter(|_| models.serves(executor))?;
    let model = crate::executors::model_through_gateway(config, executor)?;
    let key = match &models.provider_key {
        Some(_) => format!("key from {}", models.provider_key_env),
        None => format!("no key: {} is unset", models.provider_key_env),
    };
    Some(Check::pass(
        "task model",
        format!("{executor}: {model} at {url} through Handoff's model gateway ({key})"),
    ))
}

/// The provider answers its model list with the key the gateway sends; `None` without one.
pub(super) async fn provider(config: &Config) -> Option<Check> {
    let models = &config.models;
    let url = models.gateway_upstream()?.trim_end_matches('/');
    let fix = "check models.provider_url and the key in the variable models.provider_key_env names";
    let answer = match list_models(config, url).await {
        Ok(answer) => answer,
        Err(why) => {
            return Some(Check::fail(
                "model gateway",
                true,
                format!("provider at {url}: {why}"),
                fix,
            ));
        }
    };
    let status = answer.status();
    Some(if status.is_success() {
        Check::pass(
            "model gateway",
            format!("provider at {url} answers its model list (HTTP {status})"),
        )
    } else {
        let why = match status.as_u16() {
            401 | 403 => format!(
                "the provider refused the key ({} {})",
                models.provider_key_env,
                if models.provider_key.is_some() {
                    "is set"
                } else {
                    "is unset"
                }
            ),
            _ => format!("answered HTTP {status}"),
        };
        Check::fail(
            "model gateway",
            true,
            format!("provider at {url}: {why}"),
            fix,
        )
    })
}

/// `GET …/models` the way the gateway authenticates to the provider's wire.
async fn list_models(config: &Config, url: &str) -> Result<reqwest::Response, String> {
    let client = super::http_client(Duration::from_secs(10))?;
    let models = &config.models;
    let key = models.provider_key.as_ref().map(|k| k.expose().to_owned());
    let request = match models.wire {
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
    use handoff_config::LoadOptions;

    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::load(LoadOptions {
            env: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..LoadOptions::default()
        })
        .unwrap()
    }

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
        assert!(detail("claude").unwrap().starts_with("claude: c at "));
        assert_eq!(detail("codex"), None, "kept off the gateway");
        assert_eq!(detail("opencode"), None, "the shared server is not served");
    }
}
