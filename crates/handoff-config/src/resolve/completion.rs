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
    let evaluator = EvaluatorConfig {
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
