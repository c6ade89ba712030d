//! The JSON Handoff sends to and reads from Letta's V1 REST routes (the subset it needs).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `GET /v1/health/`.
#[derive(Debug, Clone, Deserialize)]
pub struct Health {
    /// Server version.
    pub version: String,
    /// `ok` when healthy.
    pub status: String,
}

/// `POST /v1/blocks/` body.
#[derive(Debug, Clone, Serialize)]
pub struct NewBlock {
    /// Unique per agent.
    pub label: String,
    /// How the agent should read the block.
    pub description: String,
    /// The value (Handoff keeps it within `limit`; Letta does not check).
    pub value: String,
    /// Characters the value may hold.
    pub limit: u32,
    /// Handoff's bookkeeping (`handoff_task_id`), to find the block again.
    pub metadata: Value,
    /// Tags for operators listing blocks.
    pub tags: Vec<String>,
}

/// A block as Letta returns it.
#[derive(Debug, Clone, Deserialize)]
pub struct Block {
    /// Letta's id (`block-<uuid>`).
    pub id: String,
    /// The label.
    #[serde(default)]
    pub label: Option<String>,
    /// The value.
    #[serde(default)]
    pub value: String,
    /// The character limit.
    #[serde(default)]
    pub limit: Option<u64>,
    /// The description.
    #[serde(default)]
    pub description: Option<String>,
    /// The metadata.
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// One message into an agent.
#[derive(Debug, Clone, Serialize)]
pub struct NewMessage {
    /// `system` or `user`.
    pub role: String,
    /// The text.
    pub content: String,
    /// The offline threading id: Handoff's key to recognise the message later.
    pub otid: String,
}

/// An agent run (`POST …/messages/async`, `GET /v1/runs/{id}`).
#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    /// Letta's id (`run-<uuid>`).
    pub id: String,
    /// `created`, `running`, `completed`, `failed`, …
    #[serde(default)]
    pub status: Option<String>,
    /// When Letta made it (ISO 8601; Letta 0.16 writes some times without a zone, meaning UTC).
    #[serde(default)]
    pub created_at: Option<String>,
}

impl Run {
    /// `created_at` as Unix ms, when it parses.
    pub fn created_at_millis(&self) -> Option<i64> {
        time_millis(self.created_at.as_deref()?)
    }
}

/// A time Letta wrote (ISO 8601, with or without a zone: without means UTC) as Unix ms.
pub fn time_millis(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                .map(|t| t.and_utc().timestamp_millis())
        })
        .ok()
}

/// Letta's error detail from a body, or the body itself, clipped for messages.
pub(crate) fn detail(body: &str) -> String {
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("detail").cloned())
        .map(|d| match d {
            Value::String(s) => s,
            other => without_inputs(other).to_string(),
        })
        .unwrap_or_else(|| body.trim().to_owned());
    if detail.chars().count() > 300 {
        let clipped: String = detail.chars().take(300).collect();
        format!("{clipped}…")
    } else {
        detail
    }
}

/// A validation detail without what the request sent: FastAPI's 422 entries echo each rejected
/// value (`input`, and `ctx` may quote it), and the values sent include tokens.
fn without_inputs(detail: Value) -> Value {
    match detail {
        Value::Array(entries) => Value::Array(entries.into_iter().map(without_inputs).collect()),
        Value::Object(mut entry) => {
            entry.remove("input");
            entry.remove("ctx");
            Value::Object(entry)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_details_do_not_repeat_what_was_sent() {
        let body = r#"{"detail":[{"type":"value_error","loc":["body","token"],"msg":"bad","input":"Bearer secret-token","ctx":{"error":"secret-token"}}]}"#;
        let said = detail(body);
        assert!(said.contains("bad"), "{said}");
        assert!(!said.contains("secret-token"), "{said}");
    }

    #[test]
    fn run_times_parse_with_or_without_a_zone() {
        let run = |at: &str| Run {
            id: "run-1".to_owned(),
            status: None,
            created_at: Some(at.to_owned()),
        };
        let zoned = run("2026-11-23T20:39:57.436053Z").created_at_millis();
        assert_eq!(zoned, Some(1_795_466_397_436));
        assert_eq!(run("2026-11-23T20:39:57.436053").created_at_millis(), zoned);
        assert_eq!(run("yesterday").created_at_millis(), None);
    }

    #[test]
    fn details_come_from_letta_json_or_the_text() {
        assert_eq!(detail(r#"{"detail":"Agent not found"}"#), "Agent not found");
        assert_eq!(
            detail(r#"{"detail":[{"loc":["body","label"]}]}"#),
            r#"[{"loc":["body","label"]}]"#
        );
        assert_eq!(detail(" bad gateway \n"), "bad gateway");
        assert_eq!(detail(&"x".repeat(1000)).chars().count(), 301);
    }
}
