//! Tests' configuration: the defaults with the given environment variables set.

use handoff_config::{Config, LoadOptions};

/// The configuration `pairs` (variable, value) give over the defaults.
#[allow(clippy::unwrap_used)]
pub(crate) fn config(pairs: &[(&str, &str)]) -> Config {
    Config::load(LoadOptions {
        env: pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..LoadOptions::default()
    })
    .unwrap()
}
