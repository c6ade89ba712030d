//! The `[models]` section: the providers the model gateway forwards tasks' calls to.

use super::{Resolver, checks::http_url};
use crate::{
    ConfigError, DEFAULT_PROVIDER, KeySource, ModelProvider, ModelWire, ModelsConfig,
    NamedProviders, Price, PriceTable, Secret,
};

/// The providers, their keys (read from the environment variable or file the config names,
/// never from the config itself) and what the gateway charges per token.
pub(super) fn models(r: &mut Resolver) -> Result<ModelsConfig, ConfigError> {
    let mut providers: Vec<ModelProvider> = default_provider(r)?.into_iter().collect();
    let named: NamedProviders = r.get("models.providers", NamedProviders::default())?;
    for mut provider in named.0 {
        provider.key = key(r, "models.providers", &provider.name, &provider.key_source)?;
        providers.push(provider);
    }
    Ok(ModelsConfig {
        gateway: r.get("models.gateway", true)?,
        providers,
        model: r
            .optional::<String>("models.model")?
            .filter(|m| !m.trim().is_empty()),
        direct: r.get("models.direct", Vec::<String>::new())?,
        task_calls_per_minute: r.optional::<u32>("models.task_calls_per_minute")?,
        agent_calls_per_minute: r.optional::<u32>("models.agent_calls_per_minute")?,
        prices: prices(r)?,
    })
}

/// The provider of the flat `models.provider_*` settings, when `models.provider_url` is set.
fn default_provider(r: &mut Resolver) -> Result<Option<ModelProvider>, ConfigError> {
    let url = {
        let url = r.optional::<String>("models.provider_url")?;
        r.check("models.provider_url", url, http_url)?
    };
    let wire: ModelWire = r.get("models.provider_wire", ModelWire::OpenAi)?;
    let key_env = r.optional::<String>("models.provider_key_env")?;
    let key_file = r.optional::<String>("models.provider_key_file")?;
    let names = ["models.provider_key_env", "models.provider_key_file"];
    let chosen = KeySource::chosen(key_env, key_file.map(Into::into), wire, names);
    let input = r.optional::<f64>("models.price_input_per_mtok")?;
    let output = r.optional::<f64>("models.price_output_per_mtok")?;
    let cached = r.optional::<f64>("models.price_cached_per_mtok")?;
    let key_source = match chosen {
        Ok(source) => source,
        Err(why) => {
            return r
                .check("models.provider_key_file", (), |_| Err(why))
                .map(|()| None);
        }
    };
    let Some(url) = url else {
        return Ok(None);
    };
    let key = key(r, "models.provider_key_file", DEFAULT_PROVIDER, &key_source)?;
    Ok(Some(ModelProvider {
        name: DEFAULT_PROVIDER.to_owned(),
        url: url.trim_end_matches('/').to_owned(),
        wire,
        key_source,
        key,
        model: None,
        price: Price::flat(input, output, cached),
    }))
}

/// The key of provider `name` from where `source` says: an unset variable is no key (the
/// provider may need none, e.g. a local server); an unreadable file is an error of `setting`.
fn key(
    r: &Resolver,
    setting: &'static str,
    name: &str,
    source: &KeySource,
) -> Result<Option<Secret>, ConfigError> {
    match source {
        KeySource::Env(var) => Ok(r.layers.variable(var).map(Secret::new)),
        KeySource::File(path) => match crate::read_key_file(path) {
            Ok(key) => Ok(Some(key)),
            Err(why) => r
                .check(setting, (), |_| {
                    Err(format!(
                        "provider {name}'s key file {}: {why}",
                        path.display()
                    ))
                })
                .map(|()| None),
        },
    }
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
