//! The `[completion]` and `[evaluator]` sections, checked together: a policy that needs a
//! judge needs a configured one.

use std::time::Duration;

use handoff_llm::Pricing;
use handoff_task::{CompletionBudget, CompletionPolicy};

use super::{Resolver, checks::*};
use crate::{Commands, CompletionConfig, ConfigError, EvaluatorConfig, Secret};

/// Verified completion and its judge.
pub(super) fn completion(
    r: &mut Resolver,
    models: &crate::ModelsConfig,
) -> Result<(CompletionConfig, EvaluatorConfig), ConfigError> {
    let completion = CompletionConfig {
        policy: r.get("completion.policy", CompletionPolicy::Checks)?,
        verify_commands: r.get("completion.verify_commands", Commands::default())?.0,
        max_cycles: {
            let n = r.get("completion.max_cycles", 5u32)?;
            r.check("completion.max_cycles", n, |n| {
                if (1..=50).contains(n) {
                    Ok(())
                } else {
                    Err("expected 1 to 50".to_owned())
                }
            })?
        },
        min_confidence: {
            let c = r.get("completion.min_confidence", 0.7f64)?;
            r.check("completion.min_confidence", c, |c| {
                if (0.0..=1.0).contains(c) {
                    Ok(())
                } else {
                    Err("expected 0 to 1".to_owned())
                }
            })?
        },
        budget: CompletionBudget {
            wall_ms: r
                .optional::<u64>("completion.budget_wall_secs")?
                .map(|s| s * 1000),
            turns: r.optional("completion.budget_turns")?,
            tokens: r.optional("completion.budget_tokens")?,
            cost_usd: r.optional("completion.budget_cost_usd")?,
        },
        verify_timeout: Duration::from_secs(r.get_checked(
            "completion.verify_timeout_secs",
            600u64,
            at_least_one_u64,
        )?),
        verify_before: Duration::from_secs(r.get("completion.verify_before_secs", 60u64)?),
        protected_paths: r.get("completion.protected_paths", Vec::<String>::new())?,
    };
    let api_key_env: Option<String> = r.optional("evaluator.api_key_env")?;
    let price_in: Option<f64> = r.optional("evaluator.price_input_per_mtok")?;
    let price_out: Option<f64> = r.optional("evaluator.price_output_per_mtok")?;
    let mut evaluator = EvaluatorConfig {
        provider: r.optional("evaluator.provider")?,
        model: r.optional("evaluator.model")?,
        api_key: api_key_env
            .as_deref()
            .and_then(|name| r.layers.variable(name))
            .map(Secret::new),
        api_key_env,
        base_url: {
            let url = r.optional::<String>("evaluator.base_url")?;
            r.check("evaluator.base_url", url, http_url)?
        },
        timeout: Duration::from_secs(r.get("evaluator.timeout_secs", 60u64)?),
        max_retries: r.get("evaluator.max_retries", 3u32)?,
        pricing: (price_in.is_some() || price_out.is_some()).then(|| Pricing {
            input_per_mtok: price_in.unwrap_or(0.0),
            output_per_mtok: price_out.unwrap_or(0.0),
        }),
    };
    on_models_provider(r, models, &mut evaluator)?;
    // A server default that needs a judge without one would refuse every task.
    let completion = {
        let judged = matches!(
            completion.policy,
            CompletionPolicy::Judge | CompletionPolicy::Manager
        );
        let has_model = evaluator.provider.is_some() && evaluator.model.is_some();
        r.check("completion.policy", completion, |_| {
            if judged && !has_model {
                Err(
                    "policies judge and manager need evaluator.provider and evaluator.model"
                        .to_owned(),
                )
            } else {
                Ok(())
            }
        })?
    };
    Ok((completion, evaluator))
}

/// `evaluator.models_provider`: the judge on one of `[models]`' providers — its wire, URL and
/// key fill what the `evaluator.*` settings leave unset, its model (or `models.model`, when that
/// goes to it) the judge's model.
fn on_models_provider(
    r: &mut Resolver,
    models: &crate::ModelsConfig,
    evaluator: &mut EvaluatorConfig,
) -> Result<(), ConfigError> {
    let Some(name) = r.optional::<String>("evaluator.models_provider")? else {
        return Ok(());
    };
    let name = r.check("evaluator.models_provider", name, |name| {
        match models.provider(name) {
            Some(_) => Ok(()),
            None => Err(format!(
                "no such provider: name `default` (models.provider_url) or one of models.providers ({})",
                models
                    .providers
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    })?;
    let Some(provider) = models.provider(&name) else {
        return Ok(());
    };
    evaluator.provider.get_or_insert(match provider.wire {
        crate::ModelWire::OpenAi => handoff_llm::Provider::OpenaiCompatible,
        crate::ModelWire::Anthropic => handoff_llm::Provider::Anthropic,
    });
    evaluator
        .base_url
        .get_or_insert_with(|| provider.url.clone());
    if evaluator.api_key_env.is_none() {
        evaluator.api_key = provider.key.clone();
    }
    if evaluator.model.is_none() {
        let routed = |m: &String| models.provider_of(m).is_some_and(|p| p.name == name);
        let configured = models.model.clone().filter(routed).map(|m| {
            m.strip_prefix(&format!("{name}/"))
                .map_or(m.clone(), str::to_owned)
        });
        evaluator.model = configured.or_else(|| provider.model.clone());
    }
    Ok(())
}
