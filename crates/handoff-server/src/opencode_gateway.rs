//! OpenCode's side of the model gateway: when the gateway serves an OpenCode executor, its
//! agents get a provider `handoff` whose URL and key are the variables every run of theirs is
//! given (the gateway's URL, the run's own token), so no agent reads the provider's key and
//! every call is counted and capped per task. In memory: nothing.

use handoff_config::{Config, ModelWire};
use serde_json::{Value, json};

/// OpenCode's id for the gateway's provider: models are named `handoff/<model>`.
pub(crate) const PROVIDER_ID: &str = "handoff";

/// `inline` (OpenCode's config for `executor`) with the gateway's provider added, and the model
/// its agents use: `executors.opencode.model` when set, else the gateway's `models.model` (or
/// the first provider's own model). The provider speaks the wire of the provider that model
/// goes to. Unchanged when the gateway does not serve `executor` or names no model.
pub(crate) fn with_gateway(
    config: &Config,
    executor: &str,
    mut inline: Value,
) -> (Value, Option<String>) {
    let own = config.executors.opencode.model.clone();
    let models = &config.models;
    if !models.serves(executor) {
        return (inline, own);
    }
    let prefix = format!("{PROVIDER_ID}/");
    let own_on_gateway = own
        .as_deref()
        .and_then(|m| m.strip_prefix(&prefix))
        .map(str::to_owned);
    let Some(chosen) = own_on_gateway.or_else(|| models.model_for(None)) else {
        return (inline, own);
    };
    let Some(wire) = models.provider_of(&chosen).map(|p| p.wire) else {
        return (inline, own);
    };
    let listed: serde_json::Map<String, Value> = listed(models, &chosen, wire)
        .into_iter()
        .map(|n| (n.clone(), json!({"name": n, "tool_call": true})))
        .collect();
    if !inline["provider"].is_object() {
        inline["provider"] = json!({});
    }
    // OpenCode reads both when it starts: each run's own URL and token, on the provider's wire.
    let (npm, options) = match wire {
        ModelWire::OpenAi => (
            "@ai-sdk/openai-compatible",
            json!({"baseURL": "{env:OPENAI_BASE_URL}", "apiKey": "{env:OPENAI_API_KEY}"}),
        ),
        ModelWire::Anthropic => (
            "@ai-sdk/anthropic",
            json!({"baseURL": "{env:ANTHROPIC_BASE_URL}/v1", "apiKey": "{env:ANTHROPIC_API_KEY}"}),
        ),
    };
    inline["provider"][PROVIDER_ID] = json!({
        "npm": npm,
        "name": "Handoff model gateway",
        "options": options,
        "models": listed,
    });
    let model = own.unwrap_or_else(|| format!("{prefix}{chosen}"));
    if inline.get("small_model").is_none() {
        inline["small_model"] = json!(model);
    }
    (inline, Some(model))
}

/// The models OpenCode is told the gateway offers on `wire`: `chosen`, `models.model` and each
/// provider's own model, those of that wire only.
fn listed(models: &handoff_config::ModelsConfig, chosen: &str, wire: ModelWire) -> Vec<String> {
    let configured = models.model.iter().cloned();
    let providers = models
        .providers
        .iter()
        .filter_map(|p| p.model.as_deref().map(|m| p.qualified(m)));
    let mut names = vec![chosen.to_owned()];
    for name in configured.chain(providers) {
        let fits = models.provider_of(&name).is_some_and(|p| p.wire == wire);
        if fits && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_config::config;

    #[test]
    fn a_served_executor_gets_the_gateway_provider_and_its_model() {
        let config = config(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            ("HANDOFF_MODELS_MODEL", "qwen3:8b"),
        ]);
        let (inline, model) = with_gateway(&config, "opencode-acp", json!({"theme": "x"}));
        assert_eq!(model.as_deref(), Some("handoff/qwen3:8b"));
        let provider = &inline["provider"]["handoff"];
        assert_eq!(provider["options"]["baseURL"], "{env:OPENAI_BASE_URL}");
        assert_eq!(provider["options"]["apiKey"], "{env:OPENAI_API_KEY}");
        assert!(provider["models"]["qwen3:8b"].is_object());
        assert_eq!(inline["theme"], "x", "the user's settings stay");
        assert_eq!(inline["small_model"], "handoff/qwen3:8b");
    }

    #[test]
    fn an_anthropic_provider_is_reached_on_its_own_wire() {
        let config = config(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9"),
            ("HANDOFF_MODELS_PROVIDER_WIRE", "anthropic"),
            ("HANDOFF_MODELS_MODEL", "claude-x"),
        ]);
        let (inline, _) = with_gateway(&config, "opencode-acp", json!({}));
        let provider = &inline["provider"]["handoff"];
        assert_eq!(provider["npm"], "@ai-sdk/anthropic");
        assert_eq!(
            provider["options"]["baseURL"],
            "{env:ANTHROPIC_BASE_URL}/v1"
        );
        assert_eq!(provider["options"]["apiKey"], "{env:ANTHROPIC_API_KEY}");
    }

    #[test]
    fn a_direct_executor_or_no_gateway_keeps_its_own_settings() {
        let direct = config(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            ("HANDOFF_MODELS_MODEL", "m"),
            ("HANDOFF_MODELS_DIRECT", "opencode-acp"),
        ]);
        let (inline, model) = with_gateway(&direct, "opencode-acp", json!({}));
        assert_eq!((inline, model), (json!({}), None));
        let none = config(&[("HANDOFF_OPENCODE_MODEL", "main/x")]);
        let (_, model) = with_gateway(&none, "opencode-acp", json!({}));
        assert_eq!(model.as_deref(), Some("main/x"));
    }

    #[test]
    fn a_named_providers_model_takes_its_wire_and_lists_its_wires_models_only() {
        let providers = r#"{"claude": {"url": "http://127.0.0.1:8", "wire": "anthropic", "model": "sonnet"}, "local": {"url": "http://127.0.0.1:7/v1", "model": "qwen"}}"#;
        let config = config(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            ("HANDOFF_MODELS_PROVIDERS", providers),
            ("HANDOFF_MODELS_MODEL", "gpt"),
            ("HANDOFF_OPENCODE_MODEL", "handoff/claude/opus"),
        ]);
        let (inline, model) = with_gateway(&config, "opencode-acp", json!({}));
        assert_eq!(model.as_deref(), Some("handoff/claude/opus"));
        let provider = &inline["provider"]["handoff"];
        assert_eq!(provider["npm"], "@ai-sdk/anthropic");
        let listed: Vec<&String> = provider["models"].as_object().unwrap().keys().collect();
        assert_eq!(listed, ["claude/opus", "claude/sonnet"]);
        let openai = config_without_own_model(providers);
        let (inline, model) = with_gateway(&openai, "opencode-acp", json!({}));
        assert_eq!(model.as_deref(), Some("handoff/gpt"));
        let listed: Vec<&String> = inline["provider"]["handoff"]["models"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(listed, ["gpt", "local/qwen"]);
    }

    fn config_without_own_model(providers: &str) -> Config {
        config(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            ("HANDOFF_MODELS_PROVIDERS", providers),
            ("HANDOFF_MODELS_MODEL", "gpt"),
        ])
    }

    #[test]
    fn an_executor_model_on_the_gateway_is_listed_too() {
        let config = config(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            ("HANDOFF_MODELS_MODEL", "small"),
            ("HANDOFF_OPENCODE_MODEL", "handoff/large"),
        ]);
        let (inline, model) = with_gateway(&config, "opencode-acp", json!({}));
        assert_eq!(model.as_deref(), Some("handoff/large"));
        assert!(inline["provider"]["handoff"]["models"]["large"].is_object());
        assert!(inline["provider"]["handoff"]["models"]["small"].is_object());
    }
}
