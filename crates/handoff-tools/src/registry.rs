use std::{collections::BTreeMap, sync::Arc};

use crate::{
    Tool, ToolDefinition,
    declare::{ErasedTool, TypedTool},
    schema::SchemaError,
};

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Its schema is unusable.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// Its name or an alias is taken.
    #[error("tool name `{0}` is registered twice")]
    Duplicate(String),
    /// Its name breaks MCP's naming rule.
    #[error("tool name `{0}` must be 1-64 characters from A-Z a-z 0-9 _ -")]
    BadName(String),
}

/// All tools Handoff serves, by name (aliases resolve to the same tool).
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<&'static str, Arc<dyn ErasedTool>>,
    aliases: BTreeMap<&'static str, &'static str>,
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; fails on a bad schema, a bad name or a name clash.
    pub fn register<T: Tool>(&mut self, tool: T) -> Result<&mut Self, RegistryError> {
        let typed = TypedTool::new(tool)?;
        let def = typed.definition();
        let (name, aliases) = (def.name, def.aliases);
        for n in std::iter::once(&name).chain(aliases) {
            if !valid_name(n) {
                return Err(RegistryError::BadName((*n).to_owned()));
            }
            if self.tools.contains_key(n) || self.aliases.contains_key(n) {
                return Err(RegistryError::Duplicate((*n).to_owned()));
            }
        }
        self.tools.insert(name, Arc::new(typed));
        for alias in aliases {
            self.aliases.insert(alias, name);
        }
        Ok(self)
    }

    /// The tool called `name` (or aliased so).
    pub(crate) fn resolve(&self, name: &str) -> Option<&Arc<dyn ErasedTool>> {
        let canonical = self.aliases.get(name).copied().unwrap_or(name);
        self.tools.get(canonical)
    }

    /// Every tool's definition, in name order.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools.values().map(|t| t.definition())
    }
}
