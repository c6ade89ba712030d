//! The `[models]` section: the provider the model gateway forwards tasks' calls to.

use super::{Resolver, checks::http_url};
use crate::{ConfigError, ModelWire, ModelsConfig, PriceTable, Secret};

/// The provider, its key (read from the environment variable the config names, never from the
/// file) and what the gateway charges per token.
pub(super) fn models(r: &mut Resolver) -> Result<ModelsConfig, ConfigError> {
    let provider_url = {
        let url = r.optional::<String>("models.provider_url")?;
        r.check("models.provider_url", url, http_url)?
    };
    let wire: ModelWire = r.get("models.provider_wire", ModelWire::OpenAi)?;
    let key_env: String = r.get("models.provider_key_env", wire.default_key_env().to_owned())?;
    let provider_key = r.layers.variable(&key_env).map(Secret::new);
    Ok(ModelsConfig {
        gateway: r.get("models.gateway", true)?,
        provider_url,
        wire,
        provider_key,
        provider_key_env: key_env,
        model: r
            .optional::<String>("models.model")?
            .filter(|m| !m.trim().is_empty()),
        direct: r.get("models.direct", Vec::<String>::new())?,
        task_calls_per_minute: r.optional::<u32>("models.task_calls_per_minute")?,
        agent_calls_per_minute: r.optional::<u32>("models.agent_calls_per_minute")?,
        price_input_per_mtok: r.optional::<f64>("models.price_input_per_mtok")?,
        price_output_per_mtok: r.optional::<f64>("models.price_output_per_mtok")?,
        prices: prices(r)?,
    })
}

/// `models.prices`: a JSON object of model → its input and output price.
fn prices(r: &mut Resolver) -> Result<PriceTable, ConfigError> {
    let json = r.optional::<String>("models.prices")?;
    let json = r.check("models.prices", json, |json| {
        json.as_deref()
            .map_or(Ok(()), |json| PriceTable::parse(json).map(drop))
    })?;
    Ok(json
        .as_deref()
        .and_then(|json| PriceTable::parse(json).ok())
        .unwrap_or_default())
}
