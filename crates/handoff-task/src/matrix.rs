//! Matrix user ids (`@name:server`): who observes or steers a task from a Matrix room.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a string is not a Matrix user id (the value is not repeated: it may be anything).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a Matrix user id @name:server (at most 255 characters)")]
pub struct InvalidMatrixUserId;

/// A Matrix user id, `@localpart:server[:port]`, checked against the spec's grammar
/// (historical localparts included).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct MatrixUserId(String);

impl MatrixUserId {
    /// The JSON-schema pattern of a Matrix user id.
    pub const PATTERN: &'static str = r"^@[!-9;-~]+:[A-Za-z0-9.\-\[\]]+(:[0-9]{1,5})?$";

    /// Validates `value` as a Matrix user id.
    pub fn parse(value: &str) -> Result<Self, InvalidMatrixUserId> {
        let rest = value.strip_prefix('@').ok_or(InvalidMatrixUserId)?;
        let (local, server) = rest.split_once(':').ok_or(InvalidMatrixUserId)?;
        let local_ok = !local.is_empty() && local.bytes().all(|b| (0x21..=0x7e).contains(&b));
        if value.len() > 255 || !local_ok || !valid_server(server) {
            return Err(InvalidMatrixUserId);
        }
        Ok(Self(value.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The server part (`example.org`, `localhost:8448`).
    pub fn server(&self) -> &str {
        self.0.split_once(':').map_or("", |(_, s)| s)
    }
}

/// A server name: a host name, IPv4 or bracketed IPv6 address, and an optional port.
pub fn valid_server(server: &str) -> bool {
    let (host, port) = match server.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') && !port.contains(']') => (host, Some(port)),
        _ => (server, None),
    };
    let port_ok =
        port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = if let Some(v6) = host.strip_prefix('[') {
        v6.strip_suffix(']').is_some_and(|a| {
            !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        })
    } else {
        !host.is_empty()
            && host.len() <= 230
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    };
    port_ok && host_ok
}

impl fmt::Display for MatrixUserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for MatrixUserId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        MatrixUserId::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Who follows a task besides its owner: another agent (by agent id) or a person in Matrix
/// (a user id starting with `@`, invited to the task's room).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ObserverId {
    /// Another agent.
    Agent(crate::AgentId),
    /// A Matrix user.
    Matrix(MatrixUserId),
}

/// Why a string is neither an agent id nor a Matrix user id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected an agent id (1-128 characters from A-Z a-z 0-9 _ -) or a Matrix user id \
     @name:server"
)]
pub struct InvalidObserver;

impl ObserverId {
    /// A Matrix user id when `value` starts with `@`, else an agent id.
    pub fn parse(value: &str) -> Result<Self, InvalidObserver> {
        if value.starts_with('@') {
            MatrixUserId::parse(value)
                .map(Self::Matrix)
                .map_err(|_| InvalidObserver)
        } else {
            crate::AgentId::parse(value)
                .map(Self::Agent)
                .map_err(|_| InvalidObserver)
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Agent(a) => a.as_str(),
            Self::Matrix(m) => m.as_str(),
        }
    }
}

impl Serialize for ObserverId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ObserverId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ObserverId::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for ObserverId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ObserverId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "Another agent's id, or a Matrix user id (@name:server) to invite to the task's room",
            "minLength": 1,
            "maxLength": 255
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
    fn user_ids_follow_the_grammar() {
        for good in [
            "@alice:example.org",
            "@bot:localhost:8448",
            "@a.b_c=d/e+f-g:matrix.org",
            "@x:[::1]:8008",
            "@x:127.0.0.1",
        ] {
            assert!(MatrixUserId::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "alice:example.org",
            "@alice",
            "@:example.org",
            "@al ice:example.org",
            "@alice:exa mple.org",
            "@alice:example.org:port",
            "@alice:",
            "@é:example.org",
        ] {
            assert!(MatrixUserId::parse(bad).is_err(), "{bad}");
        }
        let long = format!("@{}:example.org", "a".repeat(250));
        assert!(MatrixUserId::parse(&long).is_err());
        assert_eq!(
            MatrixUserId::parse("@bot:localhost:8448").unwrap().server(),
            "localhost:8448"
        );
    }

    #[test]
    fn observers_are_agents_or_matrix_users_and_errors_do_not_echo() {
        assert!(matches!(
            ObserverId::parse("agent-2"),
            Ok(ObserverId::Agent(_))
        ));
        assert!(matches!(
            ObserverId::parse("@u:server"),
            Ok(ObserverId::Matrix(_))
        ));
        let err = serde_json::from_str::<ObserverId>("\"@<script>\"").unwrap_err();
        assert!(!err.to_string().contains("script"), "{err}");
    }
}
