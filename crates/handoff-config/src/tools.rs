//! Settings of the tool pipeline: hooks, per-tool output caps — read as JSON text or TOML
//! arrays of tables, checked when the configuration is read.

use handoff_policy::{
    hooks::{HookSpec, HooksConfig},
    output::{Cap, Direction},
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::parse::FromRaw;

/// A different output cap for one Handoff tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOutputLimit {
    /// The tool's name.
    pub tool: String,
    /// Most lines per text field.
    #[serde(default)]
    pub max_lines: Option<usize>,
    /// Most bytes per text field and per whole result.
    #[serde(default)]
    pub max_bytes: Option<usize>,
    /// Which end of a text is kept.
    #[serde(default)]
    pub direction: Option<Direction>,
}

impl ToolOutputLimit {
    /// This tool's cap, starting from the global one.
    pub fn apply(&self, global: Cap) -> Cap {
        Cap {
            max_lines: self.max_lines.unwrap_or(global.max_lines),
            max_bytes: self.max_bytes.unwrap_or(global.max_bytes),
            direction: self.direction.unwrap_or(global.direction),
        }
    }
}

/// The per-tool output caps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolOutputLimits(pub Vec<ToolOutputLimit>);

fn from_json_text<T: DeserializeOwned>(text: &str, shape: &str) -> Result<T, String> {
    serde_json::from_str(text.trim()).map_err(|e| format!("expected a JSON array of {shape}: {e}"))
}

fn from_toml_value<T: DeserializeOwned>(value: &toml::Value, shape: &str) -> Result<T, String> {
    match value {
        toml::Value::String(s) => from_json_text(s, shape),
        other => {
            let json = serde_json::to_value(other).map_err(|e| e.to_string())?;
            serde_json::from_value(json)
                .map_err(|e| format!("expected an array of {shape} tables: {e}"))
        }
    }
}

const LIMIT_SHAPE: &str = "{tool, max_lines?, max_bytes?, direction?: head|tail|head_tail}";
const HOOK_SHAPE: &str = "{event: PreToolUse|PostToolUse|Stop|TaskStart|TaskEnd, matcher?, command, timeout_secs?, fail_closed?}";

impl FromRaw for ToolOutputLimits {
    fn from_text(text: &str) -> Result<Self, String> {
        from_json_text(text, LIMIT_SHAPE)
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        from_toml_value(value, LIMIT_SHAPE)
    }
}

fn checked(hooks: Vec<HookSpec>) -> Result<HooksConfig, String> {
    for hook in &hooks {
        hook.validate()?;
    }
    Ok(HooksConfig { hooks })
}

impl FromRaw for HooksConfig {
    fn from_text(text: &str) -> Result<Self, String> {
        checked(from_json_text(text, HOOK_SHAPE)?)
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        checked(from_toml_value(value, HOOK_SHAPE)?)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_policy::hooks::HookEvent;

    use super::*;

    #[test]
    fn hooks_read_from_toml_tables_and_json() {
        let file: toml::Value = toml::from_str(
            r#"
            [[hooks]]
            event = "PreToolUse"
            matcher = "Bash"
            command = "./no-curl.sh"
            timeout_secs = 5
            "#,
        )
        .unwrap();
        let hooks = HooksConfig::from_toml(file.get("hooks").unwrap()).unwrap();
        assert_eq!(hooks.hooks[0].event, HookEvent::PreToolUse);
        assert_eq!(hooks.hooks[0].timeout_secs, 5);
        let json = HooksConfig::from_text(r#"[{"event":"Stop","command":"true"}]"#).unwrap();
        assert_eq!(json.hooks[0].timeout_secs, 60);
    }

    #[test]
    fn bad_hooks_are_refused_with_the_reason() {
        let err = HooksConfig::from_text(r#"[{"event":"Never","command":"true"}]"#).unwrap_err();
        assert!(err.contains("PreToolUse|PostToolUse"), "{err}");
        let err = HooksConfig::from_text(r#"[{"event":"PreToolUse","matcher":"(","command":"x"}]"#)
            .unwrap_err();
        assert!(err.contains("not a valid regex"), "{err}");
    }

    #[test]
    fn per_tool_limits_override_the_global_cap() {
        let limits =
            ToolOutputLimits::from_text(r#"[{"tool":"get_task_history","max_bytes":1000}]"#)
                .unwrap();
        let cap = limits.0[0].apply(Cap::default());
        assert_eq!((cap.max_bytes, cap.max_lines), (1000, 2000));
    }
}
