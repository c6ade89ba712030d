//! Tracing setup: always to stderr (stdout belongs to the stdio transport).

use std::io::IsTerminal;

use handoff_config::{LogConfig, LogFormat};
use tracing_subscriber::{EnvFilter, fmt, prelude::*};

/// Installs the global subscriber. `RUST_LOG` directives, when set, replace the level.
pub fn init(config: &LogConfig) {
    // rmcp logs every session at info; keep it to warnings unless asked.
    let default = format!("{},rmcp=warn", config.level.as_str());
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let json = match config.format {
        LogFormat::Json => true,
        LogFormat::Text => false,
        LogFormat::Auto => !std::io::stderr().is_terminal(),
    };
    let registry = tracing_subscriber::registry().with(filter);
    if json {
        registry
            .with(fmt::layer().json().with_writer(std::io::stderr))
            .init();
    } else {
        registry
            .with(fmt::layer().with_writer(std::io::stderr))
            .init();
    }
}
