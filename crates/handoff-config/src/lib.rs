//! Handoff's configuration: one typed [`Config`] resolved from layered sources.
//!
//! Precedence, lowest to highest: built-in defaults < TOML file (`handoff.toml` or `--config`)
//! < `.env` file < process environment < CLI flags. The older TypeScript server's variable
//! names (`MCP_PORT`, `RUNNER_TIMEOUT_MS`, …) are honoured beside `HANDOFF_*` names. Every
//! resolved setting remembers which layer set it, and an invalid value is an error that names
//! the variable, file key or flag it came from.

mod acp;
mod acp_mcp;
mod agent_token;
mod auth;
mod completion;
mod docs;
mod error;
mod init_provider;
mod layers;
mod letta;
mod mask;
mod matrix;
mod model;
mod model_token;
mod parse;
mod permissions;
mod prices;
mod providers;
mod public_url;
mod resolve;
mod secret;
mod sections;
mod spec;
mod template;
mod tools;

pub use acp::{AcpExecutorConfig, AcpExecutors, MAX_POOL};
pub use agent_token::{DERIVED_TOKEN_PREFIX, derived_agent_token};
pub use auth::{TokenGrant, TokenGrants, TokenRole};
pub use completion::{Commands, CompletionConfig, EvaluatorConfig};
pub use docs::{REGENERATE, configuration_markdown};
pub use error::ConfigError;
pub use handoff_task::{AcpMcpServer, McpTransport};
pub use handoff_task::{PermissionAction, PermissionRule};
pub use init_provider::{InitProvider, InitProviderError};
pub use layers::{CliOverride, LoadOptions, Source};
pub use letta::{DEFAULT_TOOL_PREFIX, LettaConfig, MAX_TOOL_PREFIX, NotifyRole, check_tool_prefix};
pub use mask::{MASK, mask_json, mask_setting_text, mask_url_credentials};
pub use matrix::{Controller, MatrixConfig, Owner};
pub use model::{
    ClaudeExecutorConfig, CodexExecutorConfig, CommandExecutorConfig, Config, ExecutorsConfig,
    FeatureConfig, InstanceConfig, LogConfig, LogFormat, LogLevel, ModelWire, ModelsConfig,
    OpenCodeExecutorConfig, PromptVia, RouteError, RunnerConfig, ServerConfig, TaskConfig,
    ToolsConfig, WorkdirCleanup,
};
pub use model_token::{MODEL_TOKEN_PREFIX, model_token, model_token_owner};
pub use parse::{Argv, ByteSize};
pub use permissions::PermissionPolicy;
pub use prices::{CallTokens, Price, PriceTable};
pub use providers::{DEFAULT_PROVIDER, KeySource, ModelProvider, NamedProviders, read_key_file};
pub use resolve::EffectiveSetting;
pub use secret::Secret;
pub use spec::{SETTINGS, SettingSpec};
pub use template::{EXAMPLE_BEGIN, EXAMPLE_END, init_toml, init_toml_with_provider};
pub use tools::{ToolOutputLimit, ToolOutputLimits};
