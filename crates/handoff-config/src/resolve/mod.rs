//! Resolution of the layers into a typed [`Config`].

use std::path::PathBuf;

use handoff_llm::Provider;
use handoff_policy::hooks::HooksConfig;
use handoff_task::CompletionPolicy;

use crate::{
    Argv, ByteSize, Commands, Config, ConfigError, FeatureConfig, LoadOptions, LogConfig,
    LogFormat, LogLevel, PermissionPolicy, PromptVia, Secret, Source, ToolOutputLimits,
    WorkdirCleanup,
    layers::Layers,
    parse::FromRaw,
    spec::{SETTINGS, SettingSpec},
};

mod checks;
mod completion;
mod executors;
mod integrations;
mod models;
mod server;
mod tasks;
mod tools;

/// One resolved setting as `handoff config` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EffectiveSetting {
    /// Dotted key.
    pub key: &'static str,
    /// The value, rendered; secrets masked.
    pub value: String,
    /// The layer that set it.
    #[serde(serialize_with = "source_text")]
    pub source: Source,
}

fn source_text<S: serde::Serializer>(source: &Source, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(source)
}

/// How a typed value is shown in `handoff config`.
trait Render {
    fn render(&self) -> String;

    /// True for types whose rendering already hides the secret (so a secret setting may show
    /// it, e.g. how many tokens and their roles); any other secret setting shows only the mask.
    fn masks_itself(&self) -> bool {
        false
    }
}

/// The one path by which a resolved value becomes text for people (`handoff config`, errors).
fn shown<T: Render>(spec: &SettingSpec, value: &T) -> String {
    if spec.secret && value.masks_itself() {
        value.render()
    } else {
        spec.render_raw(&value.render())
    }
}

macro_rules! render_display {
    ($($t:ty),*) => {$(impl Render for $t { fn render(&self) -> String { self.to_string() } })*};
}
render_display!(u16, u32, u64, f64, bool, String, ByteSize);

impl Render for Secret {
    fn render(&self) -> String {
        self.masked().to_owned()
    }
    fn masks_itself(&self) -> bool {
        true
    }
}

impl Render for crate::TokenGrants {
    fn masks_itself(&self) -> bool {
        true
    }
    fn render(&self) -> String {
        // Shown like the other empty lists (and a valid TOML value for `handoff init`).
        if self.0.is_empty() {
            return "[]".to_owned();
        }
        let roles: Vec<&str> = self.0.iter().map(|g| g.role.as_str()).collect();
        format!(
            "{} token(s): {} (tokens masked)",
            roles.len(),
            roles.join(", ")
        )
    }
}

impl Render for PathBuf {
    fn render(&self) -> String {
        self.display().to_string()
    }
}
impl Render for Vec<String> {
    fn render(&self) -> String {
        format!("[{}]", self.join(", "))
    }
}
impl Render for LogLevel {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for Argv {
    fn render(&self) -> String {
        serde_json::Value::from(self.0.clone()).to_string()
    }
}
impl Render for PromptVia {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for crate::ModelWire {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for handoff_task::Delivery {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for WorkdirCleanup {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for crate::AcpExecutors {
    fn render(&self) -> String {
        self.shown().to_string()
    }
    // Agents' env and MCP servers' env and headers hold keys: shown masked, and an invalid
    // value is never echoed.
    fn masks_itself(&self) -> bool {
        true
    }
}
impl Render for crate::NamedProviders {
    fn render(&self) -> String {
        self.shown().to_string()
    }
}
impl Render for ToolOutputLimits {
    fn render(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
impl Render for HooksConfig {
    fn render(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
impl Render for crate::NotifyRole {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}

impl Render for CompletionPolicy {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for Provider {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for Commands {
    fn render(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }
}
impl Render for PermissionPolicy {
    fn render(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
impl Render for handoff_isolation::IsolationLevel {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}
impl Render for handoff_isolation::NetworkMode {
    fn render(&self) -> String {
        match self {
            handoff_isolation::NetworkMode::Shared => "shared".to_owned(),
            handoff_isolation::NetworkMode::Off => "off".to_owned(),
        }
    }
}
impl Render for LogFormat {
    fn render(&self) -> String {
        self.as_str().to_owned()
    }
}

struct Resolver {
    layers: Layers,
    effective: Vec<EffectiveSetting>,
}

impl Resolver {
    fn spec(key: &'static str) -> &'static SettingSpec {
        match SETTINGS.iter().find(|s| s.key == key) {
            Some(spec) => spec,
            // The keys below are literals checked by `every_setting_is_resolved`.
            None => unreachable!("setting {key} missing from SETTINGS"),
        }
    }

    fn opt<T: FromRaw + Render>(&mut self, key: &'static str) -> Result<Option<T>, ConfigError> {
        let spec = Self::spec(key);
        let Some((raw, source)) = self.layers.lookup(spec)? else {
            return Ok(None);
        };
        let value = T::from_raw(&raw).map_err(|reason| ConfigError::Invalid {
            key,
            origin: source.clone(),
            value: match &raw {
                crate::parse::RawValue::Text(t) => spec.render_raw(t),
                // As JSON, so secrets inside a TOML table or array are found and masked.
                crate::parse::RawValue::Toml(v) => {
                    spec.render_raw(&serde_json::to_string(v).unwrap_or_else(|_| v.to_string()))
                }
            },
            reason,
        })?;
        self.effective.push(EffectiveSetting {
            key,
            value: shown(spec, &value),
            source,
        });
        Ok(Some(value))
    }

    fn get<T: FromRaw + Render>(
        &mut self,
        key: &'static str,
        default: T,
    ) -> Result<T, ConfigError> {
        match self.opt(key)? {
            Some(value) => Ok(value),
            None => {
                self.effective.push(EffectiveSetting {
                    key,
                    value: shown(Self::spec(key), &default),
                    source: Source::Default,
                });
                Ok(default)
            }
        }
    }

    /// Like [`Resolver::opt`], recording "unset" when no layer sets it.
    fn optional<T: FromRaw + Render>(
        &mut self,
        key: &'static str,
    ) -> Result<Option<T>, ConfigError> {
        let value = self.opt(key)?;
        if value.is_none() {
            self.effective.push(EffectiveSetting {
                key,
                value: "(unset)".to_owned(),
                source: Source::Default,
            });
        }
        Ok(value)
    }

    /// [`Resolver::get`], then [`Resolver::check`] of the value under the same key.
    fn get_checked<T: FromRaw + Render>(
        &mut self,
        key: &'static str,
        default: T,
        ok: impl FnOnce(&T) -> Result<(), String>,
    ) -> Result<T, ConfigError> {
        let value = self.get(key, default)?;
        self.check(key, value, ok)
    }

    fn check<T>(
        &self,
        key: &'static str,
        value: T,
        ok: impl FnOnce(&T) -> Result<(), String>,
    ) -> Result<T, ConfigError> {
        match ok(&value) {
            Ok(()) => Ok(value),
            Err(reason) => {
                let found = self.effective.iter().rev().find(|e| e.key == key);
                Err(ConfigError::Invalid {
                    key,
                    origin: found.map_or(Source::Default, |e| e.source.clone()),
                    value: found.map_or_else(String::new, |e| e.value.clone()),
                    reason,
                })
            }
        }
    }
}

impl Config {
    /// Resolves the configuration from `options`; any invalid value is an error naming its source.
    pub fn load(options: LoadOptions) -> Result<Config, ConfigError> {
        let layers = Layers::load(options)?;
        if let Some(unknown) = layers.unknown_file_keys(SETTINGS) {
            return Err(unknown);
        }
        let mut r = Resolver {
            layers,
            effective: Vec::with_capacity(SETTINGS.len()),
        };
        // The order of the sections is the order `handoff config` lists the settings in.
        let server = server::server(&mut r)?;
        let log = LogConfig {
            level: r.get("log.level", LogLevel::Info)?,
            format: r.get("log.format", LogFormat::Auto)?,
        };
        let data_dir: PathBuf = r.get("data_dir", PathBuf::from(".handoff"))?;
        let workspace_dir = r.get("workspace_dir", data_dir.join("workspaces"))?;
        let database_url = r.optional::<Secret>("store.url")?;
        let database_url = r.check("store.url", database_url, checks::postgres_url)?;
        let heartbeat_ms =
            r.get_checked("store.heartbeat_ms", 5_000u64, checks::positive_millis)?;
        let lease_expiry_ms = r.get_checked("store.lease_expiry_ms", 15_000u64, |expiry| {
            // One late heartbeat must not cost an instance its tasks.
            if *expiry >= heartbeat_ms.saturating_mul(2) {
                Ok(())
            } else {
                Err(format!(
                    "must be at least twice store.heartbeat_ms ({heartbeat_ms})"
                ))
            }
        })?;
        let clock_skew_ms = r.get("store.clock_skew_ms", 1_000u64)?;
        let instance = crate::InstanceConfig {
            heartbeat: std::time::Duration::from_millis(heartbeat_ms),
            lease_expiry: std::time::Duration::from_millis(lease_expiry_ms),
            clock_skew: std::time::Duration::from_millis(clock_skew_ms),
        };
        let tasks = tasks::tasks(&mut r)?;
        let executors = executors::executors(&mut r)?;
        let runner = executors::runner(&mut r)?;
        let letta = integrations::letta(&mut r)?;
        let matrix = integrations::matrix(&mut r)?;
        let tools = tools::tools(&mut r)?;
        let hooks = r.get("hooks", HooksConfig::default())?;
        let models = models::models(&mut r)?;
        let (completion, evaluator) = completion::completion(&mut r, &models)?;
        let features = FeatureConfig {
            async_execute: r.get("features.async_execute", true)?,
            enforce_idempotency: r.get("features.enforce_idempotency", true)?,
        };

        Ok(Config {
            server,
            log,
            data_dir,
            database_url,
            instance,
            workspace_dir,
            tasks,
            runner,
            executors,
            letta,
            matrix,
            features,
            tools,
            hooks,
            completion,
            evaluator,
            models,
            effective: r.effective,
        })
    }
}

#[cfg(test)]
mod tests;
