use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a string is not an agent id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid agent id {shown:?}: expected 1-128 characters from A-Z a-z 0-9 _ -")]
pub struct InvalidAgentId {
    /// The rejected value, clipped for display.
    pub shown: String,
}

/// The identity of a calling agent: `^[A-Za-z0-9_-]{1,128}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct AgentId(String);

impl AgentId {
    /// The JSON-schema pattern every agent id matches.
    pub const PATTERN: &'static str = "^[A-Za-z0-9_-]{1,128}$";

    /// Validates `value` as an agent id.
    pub fn parse(value: &str) -> Result<Self, InvalidAgentId> {
        let ok = (1..=128).contains(&value.len())
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(InvalidAgentId {
                shown: value.chars().take(64).collect(),
            })
        }
    }

    /// Whether this is a Letta agent's id (`agent-<uuid4>`): only those have Letta memory to
    /// keep a workspace block in and a message inbox to notify.
    pub fn is_letta_agent(&self) -> bool {
        let Some(uuid) = self.0.strip_prefix("agent-") else {
            return false;
        };
        let groups: Vec<&str> = uuid.split('-').collect();
        groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
            && groups.iter().all(|g| {
                g.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            })
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AgentId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        AgentId::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for AgentId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AgentId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": Self::PATTERN,
            "description": "Calling agent's id; defaults to the x-agent-id header"
        })
    }

    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_letta_style_ids() {
        assert!(AgentId::parse("agent-597b5756-2915-4560-ba6b-91005f085166").is_ok());
        assert!(AgentId::parse("a").is_ok());
        assert!(AgentId::parse(&"x".repeat(128)).is_ok());
    }

    #[test]
    fn knows_letta_agents() {
        let letta = AgentId::parse("agent-597b5756-2915-4560-ba6b-91005f085166").unwrap();
        assert!(letta.is_letta_agent());
        for other in [
            "my-agent",
            "agent-1",
            "agent-597b5756-2915-4560-ba6b-91005f08516Z",
        ] {
            assert!(!AgentId::parse(other).unwrap().is_letta_agent(), "{other}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        for bad in ["", "a b", "a/b", "é", "agent.1", "a\n"] {
            assert!(AgentId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(AgentId::parse(&"x".repeat(129)).is_err());
    }

    #[test]
    fn deserialize_validates() {
        assert!(serde_json::from_str::<AgentId>("\"ok_1\"").is_ok());
        assert!(serde_json::from_str::<AgentId>("\"not ok\"").is_err());
    }
}
