//! Who may call `/mcp` and as whom: bearer tokens mapped to the principal they stand for.

use handoff_task::AgentId;
use serde::Deserialize;

use crate::{Secret, parse::FromRaw};

/// What a token's holder is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRole {
    /// Exactly one agent: it sees and steers only its own tasks, whatever header it sends.
    Agent(AgentId),
    /// A platform acting for many agents (a Letta server): it names the agent per call with
    /// `x-agent-id` (or, without one, the `agent_id` argument).
    Gateway,
    /// A person or tool (the CLI, the dashboard) that sees and steers every task; the name is
    /// recorded as who acted.
    Operator(AgentId),
}

impl TokenRole {
    /// The role's name as configured.
    pub fn as_str(&self) -> &'static str {
        match self {
            TokenRole::Agent(_) => "agent",
            TokenRole::Gateway => "gateway",
            TokenRole::Operator(_) => "operator",
        }
    }
}

/// One accepted bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    /// The token.
    pub token: Secret,
    /// Whom it stands for.
    pub role: TokenRole,
}

/// The configured tokens (`auth.tokens`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenGrants(pub Vec<TokenGrant>);

/// A token as written in the configuration.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    token: String,
    role: String,
    agent_id: Option<String>,
}

/// The operator name used when an operator token names none.
const OPERATOR: &str = "operator";

impl TryFrom<RawGrant> for TokenGrant {
    type Error = String;

    fn try_from(raw: RawGrant) -> Result<Self, String> {
        if raw.token.trim().len() < 16 {
            return Err("a token must have at least 16 characters".to_owned());
        }
        let id = |text: &str| AgentId::parse(text).map_err(|e| format!("agent_id: {e}"));
        let role = match (raw.role.as_str(), raw.agent_id.as_deref()) {
            ("agent", Some(agent)) => TokenRole::Agent(id(agent)?),
            ("agent", None) => return Err("an agent token needs agent_id".to_owned()),
            ("gateway", None) => TokenRole::Gateway,
            ("gateway", Some(_)) => {
                return Err("a gateway token names its agent per call, not agent_id".to_owned());
            }
            ("operator", name) => TokenRole::Operator(id(name.unwrap_or(OPERATOR))?),
            (other, _) => {
                return Err(format!("role `{other}` is not agent, gateway or operator"));
            }
        };
        Ok(Self {
            token: Secret::new(raw.token),
            role,
        })
    }
}

impl TokenGrants {
    fn from_raw(raw: Vec<RawGrant>) -> Result<Self, String> {
        let grants = raw
            .into_iter()
            .enumerate()
            .map(|(i, g)| TokenGrant::try_from(g).map_err(|e| format!("token {}: {e}", i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, a) in grants.iter().enumerate() {
            if grants[..i].iter().any(|b| b.token == a.token) {
                return Err(format!("token {} repeats an earlier token", i + 1));
            }
        }
        Ok(Self(grants))
    }
}

impl crate::ServerConfig {
    /// The token a gateway (a Letta server) presents: `server.auth_token`, else the first
    /// gateway entry of `auth.tokens`.
    pub fn gateway_token(&self) -> Option<&Secret> {
        self.auth_token.as_ref().or_else(|| {
            self.tokens
                .0
                .iter()
                .find(|g| g.role == TokenRole::Gateway)
                .map(|g| &g.token)
        })
    }

    /// The token bound to exactly `agent` in `auth.tokens`, if one is.
    pub fn agent_token(&self, agent: &str) -> Option<&Secret> {
        self.tokens
            .0
            .iter()
            .find(|g| matches!(&g.role, TokenRole::Agent(a) if a.as_str() == agent))
            .map(|g| &g.token)
    }
}

const SHAPE: &str =
    "expected a JSON array of {\"token\", \"role\": agent|gateway|operator, \"agent_id\"?}";

impl FromRaw for TokenGrants {
    fn from_text(text: &str) -> Result<Self, String> {
        let raw: Vec<RawGrant> = serde_json::from_str(text.trim())
            .map_err(|e| format!("{SHAPE}: {}", e.classify_name()))?;
        Self::from_raw(raw)
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::String(s) => Self::from_text(s),
            other => {
                let json = serde_json::to_value(other).map_err(|e| e.to_string())?;
                let raw: Vec<RawGrant> = serde_json::from_value(json)
                    .map_err(|e| format!("{SHAPE}: {}", e.classify_name()))?;
                Self::from_raw(raw)
            }
        }
    }
}

/// Names the kind of JSON error without quoting the (secret) input.
trait Classify {
    fn classify_name(&self) -> String;
}

impl Classify for serde_json::Error {
    fn classify_name(&self) -> String {
        match self.classify() {
            serde_json::error::Category::Data => {
                format!(
                    "wrong or missing field at line {} column {}",
                    self.line(),
                    self.column()
                )
            }
            _ => format!(
                "not valid JSON (line {} column {})",
                self.line(),
                self.column()
            ),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_with_their_roles() {
        let grants = TokenGrants::from_text(
            r#"[{"token":"aaaaaaaaaaaaaaaa1","role":"agent","agent_id":"agent-a"},
                {"token":"bbbbbbbbbbbbbbbb2","role":"gateway"},
                {"token":"cccccccccccccccc3","role":"operator"}]"#,
        )
        .unwrap();
        assert_eq!(
            grants.0[0].role,
            TokenRole::Agent(AgentId::parse("agent-a").unwrap())
        );
        assert_eq!(grants.0[1].role, TokenRole::Gateway);
        assert_eq!(
            grants.0[2].role,
            TokenRole::Operator(AgentId::parse("operator").unwrap())
        );
    }

    #[test]
    fn bad_tokens_are_refused_without_echoing_them() {
        let cases = [
            (r#"[{"token":"short","role":"gateway"}]"#, "16 characters"),
            (
                r#"[{"token":"aaaaaaaaaaaaaaaaaa","role":"agent"}]"#,
                "needs agent_id",
            ),
            (
                r#"[{"token":"aaaaaaaaaaaaaaaaaa","role":"root"}]"#,
                "not agent, gateway",
            ),
            (
                r#"[{"token":"aaaaaaaaaaaaaaaaaa","role":"gateway"},{"token":"aaaaaaaaaaaaaaaaaa","role":"gateway"}]"#,
                "repeats",
            ),
            (
                r#"[{"token":"aaaaaaaaaaaaaaaaaa","role":"gateway","extra":1}]"#,
                "wrong or missing",
            ),
            (r#"not json aaaaaaaaaaaaaaaaaa"#, "not valid JSON"),
        ];
        for (text, expected) in cases {
            let err = TokenGrants::from_text(text).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(!err.contains("aaaaaaaaaaaaaaaa"), "echoes the token: {err}");
        }
    }
}
