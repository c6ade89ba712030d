//! The `acp` executors: one per configured ACP agent, each under its own name —
//! `[executors.acp.<name>] argv = […], env = {…}, isolation = "sandbox"` in the file, or the same
//! as one JSON object in `HANDOFF_ACP_EXECUTORS`.

use std::collections::BTreeMap;

use handoff_isolation::IsolationLevel;
use serde::{Deserialize, Serialize};

use crate::{AcpMcpServer, acp_mcp::RawMcpServer, parse::FromRaw};

/// Names the built-in executors already use; an ACP agent cannot take them.
const TAKEN: &[&str] = &["command", "opencode", "opencode-cli", "claude", "codex"];

/// One ACP agent Handoff offers as an executor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcpExecutorConfig {
    /// The executor's name (`execute_task {executor}`).
    pub name: String,
    /// The agent's program and arguments, e.g. `["opencode", "acp"]`.
    pub argv: Vec<String>,
    /// Variables added to the agent's environment.
    pub env: Vec<(String, String)>,
    /// Isolation level (when unset: a sandbox where the host can sandbox, else
    /// `runner.isolation`).
    pub isolation: Option<IsolationLevel>,
    /// Agents kept started ahead of tasks.
    pub pool: usize,
    /// MCP servers given to each task session.
    pub mcp_servers: Vec<AcpMcpServer>,
}

/// Every configured ACP agent, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcpExecutors(pub Vec<AcpExecutorConfig>);

/// One agent as the file or the variable spells it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    argv: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    isolation: Option<String>,
    #[serde(default)]
    pool: usize,
    #[serde(default)]
    mcp_servers: Vec<RawMcpServer>,
}

const SHAPE: &str = "expected a JSON object of {\"<name>\": {\"argv\": [...], \"env\"?: {...}, \"isolation\"?: none|process|sandbox|container, \"pool\"?: 0..=8, \"mcp_servers\"?: [{\"name\", \"command\", \"args\"?, \"env\"?} or {\"name\", \"type\": http|sse, \"url\", \"headers\"?}]}}";

/// Most agents one executor may keep started ahead of tasks (each is a whole agent process).
pub const MAX_POOL: usize = 8;

impl AcpExecutors {
    fn from_raw(raw: BTreeMap<String, RawAgent>) -> Result<Self, String> {
        let mut agents = Vec::with_capacity(raw.len());
        for (name, agent) in raw {
            if !crate::parse::is_entry_name(&name) {
                return Err(format!(
                    "ACP executor name `{name}`: use lowercase letters, digits, - and _"
                ));
            }
            if TAKEN.contains(&name.as_str()) {
                return Err(format!(
                    "ACP executor name `{name}` is a built-in executor's; choose another"
                ));
            }
            if agent.argv.first().is_none_or(|p| p.trim().is_empty()) {
                return Err(format!(
                    "executors.acp.{name}.argv is empty; name the agent's program"
                ));
            }
            let isolation = agent
                .isolation
                .as_deref()
                .map(IsolationLevel::from_text)
                .transpose()
                .map_err(|e| format!("executors.acp.{name}.isolation: {e}"))?;
            if agent.pool > MAX_POOL {
                return Err(format!(
                    "executors.acp.{name}.pool must be at most {MAX_POOL} (each is a whole agent process)"
                ));
            }
            let mcp_servers = crate::acp_mcp::servers(&name, agent.mcp_servers)?;
            agents.push(AcpExecutorConfig {
                name,
                argv: agent.argv,
                env: agent.env.into_iter().collect(),
                isolation,
                pool: agent.pool,
                mcp_servers,
            });
        }
        Ok(Self(agents))
    }

    /// The agents as shown to people (`handoff config`, errors): every `env` value and every
    /// MCP server's env and header value masked, as they hold keys, often inside JSON text no
    /// key-based masking sees into.
    pub fn shown(&self) -> serde_json::Value {
        self.json(true)
    }

    /// The agents as one JSON object, the shape they are configured in.
    pub fn to_json(&self) -> serde_json::Value {
        self.json(false)
    }

    /// The agents in their configured shape, their values `masked` or not.
    fn json(&self, masked: bool) -> serde_json::Value {
        let agents: serde_json::Map<String, serde_json::Value> = self
            .0
            .iter()
            .map(|a| {
                let env: BTreeMap<&str, &str> = a
                    .env
                    .iter()
                    .map(|(k, v)| (k.as_str(), if masked { crate::MASK } else { v.as_str() }))
                    .collect();
                let mut agent = serde_json::json!({ "argv": a.argv, "env": env });
                if let Some(level) = a.isolation {
                    agent["isolation"] = serde_json::json!(level.as_str());
                }
                if a.pool > 0 {
                    agent["pool"] = serde_json::json!(a.pool);
                }
                if !a.mcp_servers.is_empty() {
                    let servers = a.mcp_servers.iter();
                    agent["mcp_servers"] = servers
                        .map(|s| crate::acp_mcp::to_json(s, masked))
                        .collect();
                }
                (a.name.clone(), agent)
            })
            .collect();
        serde_json::Value::Object(agents)
    }
}

impl FromRaw for AcpExecutors {
    fn from_text(text: &str) -> Result<Self, String> {
        Self::from_toml(&toml::Value::String(text.to_owned()))
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        Self::from_raw(crate::parse::named_tables(value, SHAPE)?)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn agents_read_from_toml_tables_and_json() {
        let file: toml::Table = toml::from_str(
            r#"
            [opencode-acp]
            argv = ["opencode", "acp"]
            env = { OPENCODE_DISABLE_AUTOUPDATE = "1" }
            isolation = "sandbox"
            "#,
        )
        .unwrap();
        let agents = AcpExecutors::from_toml(&toml::Value::Table(file)).unwrap();
        assert_eq!(agents.0[0].name, "opencode-acp");
        assert_eq!(agents.0[0].argv, ["opencode", "acp"]);
        assert_eq!(agents.0[0].isolation, Some(IsolationLevel::Sandbox));
        assert_eq!(agents.0[0].env[0].0, "OPENCODE_DISABLE_AUTOUPDATE");
        let json = AcpExecutors::from_text(r#"{"codex-acp": {"argv": ["codex-acp"]}}"#).unwrap();
        assert_eq!(json.0[0].isolation, None);
        assert_eq!(json.0[0].pool, 0);
        let pooled = AcpExecutors::from_text(r#"{"c": {"argv": ["c"], "pool": 2}}"#).unwrap();
        assert_eq!(pooled.to_json()["c"]["pool"], 2);
        assert_eq!(json.to_json()["codex-acp"]["argv"][0], "codex-acp");
        let shown = agents.shown();
        assert_eq!(
            shown["opencode-acp"]["env"]["OPENCODE_DISABLE_AUTOUPDATE"],
            crate::MASK
        );
        assert_eq!(shown["opencode-acp"]["argv"][1], "acp");
        let served = AcpExecutors::from_text(
            r#"{"c": {"argv": ["c"], "mcp_servers": [{"name": "n", "command": "n-mcp", "env": {"TOKEN": "t0p"}}]}}"#,
        )
        .unwrap();
        assert_eq!(served.0[0].mcp_servers[0].name, "n");
        assert_eq!(
            served.to_json()["c"]["mcp_servers"][0]["env"]["TOKEN"],
            "t0p"
        );
        assert_eq!(
            served.shown()["c"]["mcp_servers"][0]["env"]["TOKEN"],
            crate::MASK
        );
        let again = AcpExecutors::from_text(&served.to_json().to_string()).unwrap();
        assert_eq!(again, served, "what to_json writes reads back the same");
    }

    #[test]
    fn bad_agents_are_refused_with_the_reason() {
        for (text, words) in [
            (r#"{"codex": {"argv": ["x"]}}"#, "built-in"),
            (r#"{"Bad Name": {"argv": ["x"]}}"#, "lowercase"),
            (r#"{"a": {"argv": []}}"#, "argv is empty"),
            (
                r#"{"a": {"argv": ["x"], "isolation": "moon"}}"#,
                "isolation",
            ),
            (r#"{"a": {"argv": ["x"], "cwd": "/"}}"#, "unknown field"),
            (r#"{"a": {"argv": ["x"], "pool": 9}}"#, "at most 8"),
        ] {
            let error = AcpExecutors::from_text(text).unwrap_err();
            assert!(error.contains(words), "{text}: {error}");
        }
    }
}
