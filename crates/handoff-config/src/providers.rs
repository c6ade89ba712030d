//! The model providers the gateway forwards to: the default one (`models.provider_url` and its
//! keys) and named ones (`[models.providers.<name>]` tables, or one JSON object in
//! `HANDOFF_MODELS_PROVIDERS`), each with its URL, wire, key (from an environment variable or a
//! file) and optional default model and flat price.

use std::{collections::BTreeMap, path::PathBuf};

use serde::Deserialize;

use crate::{ModelWire, Price, Secret, parse::FromRaw};

/// The name the provider of the flat `models.provider_*` settings goes by.
pub const DEFAULT_PROVIDER: &str = "default";

/// Where a provider's key is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// An environment variable of Handoff's (kept from every task).
    Env(String),
    /// A file only Handoff's user may read (hidden inside every sandbox); re-read when it
    /// changes, so a rotated key takes effect at the next call.
    File(PathBuf),
}

impl KeySource {
    /// Where a provider's key is read from, as its `key_env` and `key_file` settings (named
    /// `env_name` and `file_name` in errors) say: the file (an absolute path), else the
    /// variable, else the usual variable of `wire`.
    pub(crate) fn chosen(
        key_env: Option<String>,
        key_file: Option<PathBuf>,
        wire: ModelWire,
        [env_name, file_name]: [&str; 2],
    ) -> Result<KeySource, String> {
        match (key_env, key_file) {
            (Some(_), Some(_)) => Err(format!("give {env_name} or {file_name}, not both")),
            (_, Some(path)) if !path.is_absolute() => {
                Err(format!("{file_name}: must be an absolute path"))
            }
            (_, Some(path)) => Ok(KeySource::File(path)),
            (Some(var), None) if var.trim().is_empty() => Err(format!("{env_name}: is empty")),
            (Some(var), None) => Ok(KeySource::Env(var)),
            (None, None) => Ok(KeySource::Env(wire.default_key_env().to_owned())),
        }
    }

    /// Where the key comes from, in words (`doctor`, errors); never the key.
    pub fn describe(&self) -> String {
        match self {
            KeySource::Env(var) => format!("the variable {var}"),
            KeySource::File(path) => format!("the file {}", path.display()),
        }
    }
}

/// One provider the gateway forwards calls to.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProvider {
    /// Its name: `default`, or the name of its `[models.providers.<name>]` table.
    pub name: String,
    /// Its base URL (`…/v1` for OpenAI-compatible ones).
    pub url: String,
    /// Its wire.
    pub wire: ModelWire,
    /// Where its key is read from.
    pub key_source: KeySource,
    /// Its key as read when the config was loaded (a key file is re-read when it changes).
    pub key: Option<Secret>,
    /// The model agents of its wire use when nothing names one.
    pub model: Option<String>,
    /// USD per million tokens of every model of this provider, when set.
    pub price: Option<Price>,
}

impl ModelProvider {
    /// `model` as this provider's agents ask for it: `<name>/<model>` for a named provider,
    /// so the gateway routes it back here; bare for the default one.
    pub fn qualified(&self, model: &str) -> String {
        if self.name == DEFAULT_PROVIDER {
            model.to_owned()
        } else {
            format!("{}/{model}", self.name)
        }
    }
}

/// The named providers as configured, keys not read yet (the resolver reads them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamedProviders(pub Vec<ModelProvider>);

/// One provider as the file or the variable spells it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProvider {
    url: String,
    #[serde(default)]
    wire: Option<String>,
    #[serde(default)]
    key_env: Option<String>,
    #[serde(default)]
    key_file: Option<PathBuf>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    price_input_per_mtok: Option<f64>,
    #[serde(default)]
    price_output_per_mtok: Option<f64>,
    #[serde(default)]
    price_cached_per_mtok: Option<f64>,
}

const SHAPE: &str = "expected a JSON object of {\"<name>\": {\"url\", \"wire\"?: openai|anthropic, \"key_env\"? or \"key_file\"?, \"model\"?, \"price_input_per_mtok\"?, \"price_output_per_mtok\"?, \"price_cached_per_mtok\"?}}";

impl NamedProviders {
    fn from_raw(raw: BTreeMap<String, RawProvider>) -> Result<Self, String> {
        raw.into_iter()
            .map(|(name, raw)| provider(name, raw))
            .collect::<Result<_, _>>()
            .map(NamedProviders)
    }

    /// The providers in their configured shape (`handoff config`): where each key is read
    /// from, never a key.
    pub fn shown(&self) -> serde_json::Value {
        let providers: serde_json::Map<String, serde_json::Value> = self
            .0
            .iter()
            .map(|p| {
                let mut shown = serde_json::json!({"url": p.url, "wire": p.wire.as_str()});
                match &p.key_source {
                    KeySource::Env(var) => shown["key_env"] = var.as_str().into(),
                    KeySource::File(path) => shown["key_file"] = path.to_string_lossy().into(),
                }
                if let Some(model) = &p.model {
                    shown["model"] = model.as_str().into();
                }
                if let Some(price) = p.price {
                    shown["price_input_per_mtok"] = price.input.into();
                    shown["price_output_per_mtok"] = price.output.into();
                    if let Some(cached) = price.cached {
                        shown["price_cached_per_mtok"] = cached.into();
                    }
                }
                (p.name.clone(), shown)
            })
            .collect();
        serde_json::Value::Object(providers)
    }
}

/// One named provider, checked.
fn provider(name: String, raw: RawProvider) -> Result<ModelProvider, String> {
    let field = |f: &str| format!("models.providers.{name}.{f}");
    if !crate::parse::is_entry_name(&name) {
        return Err(format!(
            "models.providers: a provider's name must be lowercase letters, digits, - and _ (`{}` is not)",
            name.escape_default()
        ));
    }
    if name == DEFAULT_PROVIDER {
        return Err(format!(
            "models.providers.{DEFAULT_PROVIDER}: that name is the models.provider_url provider's; choose another"
        ));
    }
    if !(raw.url.starts_with("http://") || raw.url.starts_with("https://")) {
        return Err(format!(
            "{}: expected an http:// or https:// URL",
            field("url")
        ));
    }
    let wire = match raw.wire.as_deref() {
        Some(text) => ModelWire::from_text(text).map_err(|e| format!("{}: {e}", field("wire")))?,
        None => ModelWire::OpenAi,
    };
    let names = [field("key_env"), field("key_file")];
    let key_source = KeySource::chosen(
        raw.key_env,
        raw.key_file,
        wire,
        names.each_ref().map(String::as_str),
    )?;
    let fine = |v: Option<f64>, f: &str| match v {
        Some(v) if !v.is_finite() || v < 0.0 => Err(format!("{}: must be 0 or more", field(f))),
        v => Ok(v),
    };
    let input = fine(raw.price_input_per_mtok, "price_input_per_mtok")?;
    let output = fine(raw.price_output_per_mtok, "price_output_per_mtok")?;
    let cached = fine(raw.price_cached_per_mtok, "price_cached_per_mtok")?;
    let price = Price::flat(input, output, cached);
    Ok(ModelProvider {
        name,
        url: raw.url.trim_end_matches('/').to_owned(),
        wire,
        key_source,
        key: None,
        model: raw.model.filter(|m| !m.trim().is_empty()),
        price,
    })
}

impl FromRaw for NamedProviders {
    fn from_text(text: &str) -> Result<Self, String> {
        Self::from_toml(&toml::Value::String(text.to_owned()))
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        Self::from_raw(crate::parse::named_tables(value, SHAPE)?)
    }
}

/// Reads the key in `path`: its first line, trimmed. Refused when the file is open to other
/// users (as ssh refuses such a private key), so a key file is never quietly exposed.
pub fn read_key_file(path: &std::path::Path) -> Result<Secret, String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "other users may read it (mode {mode:o}); chmod 600 it"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let key = text.lines().next().unwrap_or_default().trim();
    if key.is_empty() {
        return Err("it is empty".to_owned());
    }
    Ok(Secret::new(key.to_owned()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn providers_read_from_toml_and_json_and_checked() {
        let file: toml::Table = toml::from_str(
            r#"
            [claude]
            url = "https://api.anthropic.com/"
            wire = "anthropic"
            key_file = "/etc/handoff/anthropic.key"
            model = "claude-sonnet-4-5"
            [local]
            url = "http://127.0.0.1:11434/v1"
            price_output_per_mtok = 0.5
            "#,
        )
        .unwrap();
        let named = NamedProviders::from_toml(&toml::Value::Table(file)).unwrap();
        let claude = &named.0[0];
        assert_eq!(claude.url, "https://api.anthropic.com");
        assert_eq!(claude.wire, ModelWire::Anthropic);
        assert_eq!(
            claude.key_source,
            KeySource::File("/etc/handoff/anthropic.key".into())
        );
        assert_eq!(claude.qualified("m"), "claude/m");
        let local = &named.0[1];
        assert_eq!(local.key_source, KeySource::Env("OPENAI_API_KEY".into()));
        assert_eq!(local.price.unwrap().output, 0.5);
        assert_eq!(
            named.shown()["claude"]["key_file"],
            "/etc/handoff/anthropic.key"
        );
        let bad = |json: &str| NamedProviders::from_text(json).unwrap_err();
        assert!(bad(r#"{"default": {"url": "http://x"}}"#).contains("models.providers.default"));
        assert!(bad(r#"{"A": {"url": "http://x"}}"#).contains("lowercase"));
        let both = bad(r#"{"a": {"url": "http://x", "key_env": "K", "key_file": "/k"}}"#);
        assert!(both.contains("models.providers.a.key_env"), "{both}");
        let relative = bad(r#"{"a": {"url": "http://x", "key_file": "k"}}"#);
        assert!(relative.contains("absolute"), "{relative}");
        assert!(bad(r#"{"a": {"url": "ftp://x"}}"#).contains("models.providers.a.url"));
        assert!(bad(r#"{"a": {"url": "http://x", "wire": "grpc"}}"#).contains(".wire"));
        assert!(bad(r#"{"a": {"url": "http://x", "extra": 1}}"#).contains("extra"));
    }

    #[test]
    fn a_key_file_open_to_others_or_empty_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "sk-file-key\nignored\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_key_file(&path).unwrap_err().contains("chmod 600"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_key_file(&path).unwrap().expose(), "sk-file-key");
        std::fs::write(&path, "\n").unwrap();
        assert!(read_key_file(&path).unwrap_err().contains("empty"));
        assert!(
            read_key_file(&dir.path().join("none"))
                .unwrap_err()
                .contains("cannot read")
        );
    }
}
