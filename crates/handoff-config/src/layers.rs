use std::{
    collections::BTreeMap,
    fmt,
    path::{Path, PathBuf},
};

use crate::{ConfigError, parse::RawValue, spec::SettingSpec};

/// The layer a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Handoff's built-in default.
    Default,
    /// A key in the TOML config file.
    File {
        /// The file.
        path: PathBuf,
        /// The dotted key in it.
        key: String,
    },
    /// A variable in the `.env` file.
    DotEnv {
        /// The `.env` file.
        path: PathBuf,
        /// The variable name.
        var: String,
    },
    /// A process environment variable.
    Env {
        /// The variable name.
        var: String,
    },
    /// A command-line flag.
    Cli {
        /// The flag as typed, e.g. `--port`.
        flag: String,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, key } => write!(f, "{key} in {}", path.display()),
            Source::DotEnv { path, var } => write!(f, "{var} in {}", path.display()),
            Source::Env { var } => write!(f, "environment variable {var}"),
            Source::Cli { flag } => write!(f, "flag {flag}"),
        }
    }
}

/// A value supplied on the command line for one setting key.
#[derive(Debug, Clone)]
pub struct CliOverride {
    /// Dotted setting key, e.g. `server.port`.
    pub key: &'static str,
    /// The flag as the user typed it, for error messages.
    pub flag: &'static str,
    /// The flag's value.
    pub value: String,
}

/// Everything configuration is resolved from; built by the binary, or by tests with fixed maps.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Explicit config file (`--config` / `HANDOFF_CONFIG`): must exist.
    pub config_file: Option<PathBuf>,
    /// Config file used when present (normally `./handoff.toml`).
    pub default_config_file: Option<PathBuf>,
    /// `.env` file used when present (normally `./.env`).
    pub dotenv_file: Option<PathBuf>,
    /// The process environment.
    pub env: BTreeMap<String, String>,
    /// CLI flags, highest precedence.
    pub cli: Vec<CliOverride>,
}

impl LoadOptions {
    /// Options for a real process: its environment, `./handoff.toml` and `./.env` when present.
    pub fn from_process(config_file: Option<PathBuf>, cli: Vec<CliOverride>) -> Self {
        let env: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let config_file = config_file.or_else(|| env.get("HANDOFF_CONFIG").map(PathBuf::from));
        Self {
            config_file,
            default_config_file: Some(PathBuf::from("handoff.toml")),
            dotenv_file: Some(PathBuf::from(".env")),
            env,
            cli,
        }
    }
}

/// The loaded layers, queried per setting from highest to lowest precedence.
pub(crate) struct Layers {
    cli: Vec<CliOverride>,
    env: BTreeMap<String, String>,
    dotenv: Option<(PathBuf, BTreeMap<String, String>)>,
    file: Option<(PathBuf, BTreeMap<String, toml::Value>)>,
}

impl Layers {
    /// A variable from the environment, else from the `.env` file (secrets named by a setting,
    /// such as the evaluator's key).
    pub(crate) fn variable(&self, name: &str) -> Option<String> {
        self.env
            .get(name)
            .or_else(|| self.dotenv.as_ref().and_then(|(_, vars)| vars.get(name)))
            .cloned()
    }

    pub(crate) fn load(options: LoadOptions) -> Result<Self, ConfigError> {
        let file = match (&options.config_file, &options.default_config_file) {
            (Some(path), _) => Some(read_toml(path)?),
            (None, Some(path)) if path.is_file() => Some(read_toml(path)?),
            _ => None,
        };
        let dotenv = match &options.dotenv_file {
            Some(path) if path.is_file() => Some(read_dotenv(path)?),
            _ => None,
        };
        Ok(Self {
            cli: options.cli,
            env: options.env,
            dotenv,
            file,
        })
    }

    /// Keys in the file that no setting claims.
    pub(crate) fn unknown_file_keys(&self, specs: &[SettingSpec]) -> Option<ConfigError> {
        let (path, table) = self.file.as_ref()?;
        table
            .keys()
            .find(|key| !specs.iter().any(|s| s.key == key.as_str()))
            .map(|key| ConfigError::UnknownKey {
                key: key.clone(),
                path: path.clone(),
            })
    }

    /// The highest-precedence raw value for `spec`, with where it came from.
    pub(crate) fn lookup(
        &self,
        spec: &SettingSpec,
    ) -> Result<Option<(RawValue, Source)>, ConfigError> {
        if let Some(cli) = self.cli.iter().rev().find(|c| c.key == spec.key) {
            let source = Source::Cli {
                flag: cli.flag.to_owned(),
            };
            return Ok(Some((RawValue::Text(cli.value.clone()), source)));
        }
        if let Some(found) = lookup_env(spec, &self.env, |var| Source::Env { var })? {
            return Ok(Some(found));
        }
        if let Some((path, vars)) = &self.dotenv {
            let found = lookup_env(spec, vars, |var| Source::DotEnv {
                path: path.clone(),
                var,
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        if let Some((path, table)) = &self.file
            && let Some(value) = table.get(spec.key)
        {
            let source = Source::File {
                path: path.clone(),
                key: spec.key.to_owned(),
            };
            return Ok(Some((RawValue::Toml(value.clone()), source)));
        }
        Ok(None)
    }
}

fn lookup_env(
    spec: &SettingSpec,
    vars: &BTreeMap<String, String>,
    source: impl Fn(String) -> Source,
) -> Result<Option<(RawValue, Source)>, ConfigError> {
    for alias in spec.env {
        let Some(value) = vars.get(alias.name) else {
            continue;
        };
        let src = source(alias.name.to_owned());
        let mapped = match alias.transform {
            None => Some(value.clone()),
            Some(transform) => transform(value).map_err(|reason| ConfigError::Invalid {
                key: spec.key,
                origin: src.clone(),
                value: spec.render_raw(value),
                reason,
            })?,
        };
        if let Some(mapped) = mapped {
            return Ok(Some((RawValue::Text(mapped), src)));
        }
    }
    Ok(None)
}

fn read_toml(path: &Path) -> Result<(PathBuf, BTreeMap<String, toml::Value>), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Toml {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let mut flat = BTreeMap::new();
    flatten("", table, &mut flat);
    Ok((path.to_owned(), flat))
}

/// Flattens nested tables into dotted keys; arrays and scalars are leaves.
fn flatten(prefix: &str, table: toml::Table, out: &mut BTreeMap<String, toml::Value>) {
    for (key, value) in table {
        let dotted = if prefix.is_empty() {
            key
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner)
                if !crate::spec::TABLE_SETTINGS.contains(&dotted.as_str()) =>
            {
                flatten(&dotted, inner, out)
            }
            leaf => {
                out.insert(dotted, leaf);
            }
        }
    }
}

fn read_dotenv(path: &Path) -> Result<(PathBuf, BTreeMap<String, String>), ConfigError> {
    let err = |message: String| ConfigError::DotEnv {
        path: path.to_owned(),
        message,
    };
    let iter = dotenvy::from_path_iter(path).map_err(|e| err(e.to_string()))?;
    let mut vars = BTreeMap::new();
    for item in iter {
        let (key, value) = item.map_err(|e| err(e.to_string()))?;
        vars.insert(key, value);
    }
    Ok((path.to_owned(), vars))
}
