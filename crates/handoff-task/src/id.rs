use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a string is not a task id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid task id {shown:?}: expected `task_` followed by 26 characters from a-z 2-7")]
pub struct InvalidTaskId {
    /// The rejected value, clipped for display.
    pub shown: String,
}

/// A task's id: `task_` + 128 random bits in lowercase base32 — unguessable, so knowing one
/// id tells nothing about another.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct TaskId(String);

const PREFIX: &str = "task_";
const ENCODED_LEN: usize = 26;

fn encoding() -> data_encoding::Encoding {
    let mut spec = data_encoding::Specification::new();
    spec.symbols.push_str("abcdefghijklmnopqrstuvwxyz234567");
    // The alphabet above is a fixed valid 32-symbol set, so this cannot fail.
    spec.encoding()
        .unwrap_or_else(|_| data_encoding::BASE32_NOPAD.clone())
}

impl TaskId {
    /// The JSON-schema pattern every task id matches.
    pub const PATTERN: &'static str = "^task_[a-z2-7]{26}$";

    /// A fresh random id from the operating system's CSPRNG.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        Ok(Self(format!("{PREFIX}{}", encoding().encode(&bytes))))
    }

    /// Validates `value` as a task id.
    pub fn parse(value: &str) -> Result<Self, InvalidTaskId> {
        let ok = value.strip_prefix(PREFIX).is_some_and(|rest| {
            rest.len() == ENCODED_LEN
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))
        });
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(InvalidTaskId {
                shown: value.chars().take(64).collect(),
            })
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        TaskId::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for TaskId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TaskId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": Self::PATTERN,
            "description": "A task id as returned by execute_task"
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
    fn generated_ids_parse_and_differ() {
        let a = TaskId::generate().unwrap();
        let b = TaskId::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(TaskId::parse(a.as_str()).unwrap(), a);
        assert_eq!(a.as_str().len(), PREFIX.len() + ENCODED_LEN);
    }

    #[test]
    fn rejects_malformed_ids() {
        for bad in [
            "",
            "task_",
            "task-aaaaaaaaaaaaaaaaaaaaaaaaaa",
            "task_AAAAAAAAAAAAAAAAAAAAAAAAAA",
            "task_aaaaaaaaaaaaaaaaaaaaaaaaa1",
            "task_../../etc/passwd",
        ] {
            assert!(TaskId::parse(bad).is_err(), "{bad:?}");
        }
    }
}
