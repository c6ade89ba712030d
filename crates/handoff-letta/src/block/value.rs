//! The block's value: a versioned JSON object built from one task snapshot. Texts are clipped
//! here already; [`super::fit_value`] then prunes until the whole fits the block's limit.

use handoff_integration::TaskOverview;
use handoff_task::{EventKind, EventLines, ModelUsage, TaskStatus};
use serde::Serialize;
use serde_json::Value;

use super::{clip_chars, duration_text, iso, title};

/// The version of the value's shape; bumped when a field changes meaning.
pub const VALUE_VERSION: u32 = 1;
/// Characters of the task description shown (the full text stays in Handoff).
const TITLE_CHARS: usize = 160;
/// Characters of one event's message.
const EVENT_CHARS: usize = 200;
/// Characters of an error or latest-progress line in the summary.
const DETAIL_CHARS: usize = 300;
/// Characters of one pending question.
const PENDING_CHARS: usize = 300;
/// Stored outputs listed at most.
const ARTIFACTS_SHOWN: usize = 10;

/// What the workspace block holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkspaceValue {
    /// Shape version ([`VALUE_VERSION`]).
    pub version: u32,
    /// Handoff's task id.
    pub task_id: String,
    /// The task's state.
    pub status: String,
    /// The round of work, once a follow-up continued the task (absent: the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// Submission time (RFC 3339).
    pub created_at: String,
    /// When this value was made (RFC 3339).
    pub updated_at: String,
    /// What the task is and where it stands.
    pub summary: String,
    /// The latest events, oldest first; the first entry may count pruned older ones.
    pub recent_events: Vec<EventEntry>,
    /// Stored outputs by kind and size (read them through Handoff).
    pub artifacts_index: Vec<ArtifactEntry>,
    /// Questions waiting for the owner.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending_input: Vec<PendingEntry>,
    /// The completion evaluator's verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluator: Option<Value>,
    /// What the task's model calls through Handoff's gateway took so far (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_usage: Option<UsageEntry>,
}

/// The task's model usage in the block: tokens and cost, the two a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UsageEntry {
    /// Input and output tokens.
    pub tokens: u64,
    /// US dollars, to the millionth.
    pub cost_usd: f64,
}

impl From<&ModelUsage> for UsageEntry {
    fn from(usage: &ModelUsage) -> Self {
        Self {
            tokens: usage.tokens(),
            // Rounded: a sum of float prices prints with noise digits the block has no room for.
            cost_usd: (usage.cost_usd * 1e6).round() / 1e6,
        }
    }
}

/// One line of `recent_events`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum EventEntry {
    /// How many older events were left out.
    Pruned {
        /// The count.
        pruned: u64,
        /// Where to read them.
        note: String,
    },
    /// One event.
    Event {
        /// Its number in the task's history.
        seq: i64,
        /// When (RFC 3339).
        at: String,
        /// Its kind.
        kind: String,
        /// Its message, clipped.
        message: String,
    },
}

/// One stored output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArtifactEntry {
    /// Its kind (`output`, `diff`, `log`).
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// Whether bytes beyond the store's cap were dropped.
    pub capped: bool,
}

/// One request waiting for the owner.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingEntry {
    /// The key to answer with.
    pub key: String,
    /// `permission` or `question`.
    pub kind: String,
    /// What is asked, clipped.
    pub summary: String,
}

impl WorkspaceValue {
    /// The value for `snapshot`, with every text clipped but nothing pruned yet.
    pub fn from_snapshot(s: &TaskOverview) -> Self {
        // One line per tool call and no policy allow, as every surface shows events.
        let mut lines = EventLines::default();
        let events: Vec<EventEntry> = s
            .recent_events
            .iter()
            .filter(|e| lines.keep(e.kind, &e.data))
            .map(|e| EventEntry::Event {
                seq: e.seq,
                at: iso(e.at),
                kind: e.kind.as_str().to_owned(),
                message: clip_chars(&e.message, EVENT_CHARS),
            })
            .collect();
        // Events left out as lesser steps are not "older events pruned".
        let older = s.total_events.saturating_sub(s.recent_events.len() as u64);
        let mut value = Self {
            version: VALUE_VERSION,
            task_id: s.task.id.to_string(),
            status: s.task.status.as_str().to_owned(),
            round: (s.task.options.round > 1).then_some(s.task.options.round),
            created_at: iso(s.task.created_at),
            updated_at: iso(s.at),
            summary: summary(s),
            recent_events: events,
            artifacts_index: s
                .artifacts
                .iter()
                .take(ARTIFACTS_SHOWN)
                .map(|a| ArtifactEntry {
                    name: a.kind.as_str().to_owned(),
                    size: a.size,
                    capped: a.capped,
                })
                .collect(),
            pending_input: s
                .pending_input
                .iter()
                .map(|p| PendingEntry {
                    key: p.id.clone(),
                    kind: p.kind.clone(),
                    summary: clip_chars(&p.title, PENDING_CHARS),
                })
                .collect(),
            evaluator: s.completion.as_ref().map(clip_json),
            model_usage: s.model_usage.as_ref().map(UsageEntry::from),
        };
        value.set_pruned(older);
        value
    }

    /// Older events left out so far.
    pub fn pruned(&self) -> u64 {
        match self.recent_events.first() {
            Some(EventEntry::Pruned { pruned, .. }) => *pruned,
            _ => 0,
        }
    }

    /// Sets the pruned-events marker (removing it at zero).
    pub(crate) fn set_pruned(&mut self, n: u64) {
        if matches!(self.recent_events.first(), Some(EventEntry::Pruned { .. })) {
            self.recent_events.remove(0);
        }
        if n > 0 {
            let note = format!(
                "{n} older events pruned; get_task_history {{\"task_id\": \"{}\"}} has them all",
                self.task_id
            );
            self.recent_events
                .insert(0, EventEntry::Pruned { pruned: n, note });
        }
    }

    /// Drops the oldest event shown; false when none is left.
    pub(crate) fn prune_oldest(&mut self) -> bool {
        let first_event = self
            .recent_events
            .iter()
            .position(|e| matches!(e, EventEntry::Event { .. }));
        match first_event {
            Some(i) => {
                self.recent_events.remove(i);
                let n = self.pruned() + 1;
                self.set_pruned(n);
                true
            }
            None => false,
        }
    }
}

/// The task's title and where it stands, in a sentence or two.
fn summary(s: &TaskOverview) -> String {
    let task = &s.task;
    let title = title(&task.description, TITLE_CHARS);
    let ran = task
        .started_at
        .map(|start| duration_text(task.completed_at.unwrap_or(s.at) - start));
    let latest = s
        .recent_events
        .iter()
        .rev()
        .find(|e| {
            matches!(
                e.kind,
                EventKind::Text | EventKind::Tool | EventKind::Output | EventKind::Verdict
            )
        })
        .map(|e| clip_chars(&e.message, DETAIL_CHARS));
    let error = task.error.as_deref().map(|e| clip_chars(e, DETAIL_CHARS));
    let state = match task.status {
        TaskStatus::Queued => "Queued, waiting for a free slot.".to_owned(),
        TaskStatus::Running => match (&ran, &latest) {
            (Some(ran), Some(latest)) => format!("Running for {ran}. Latest: {latest}"),
            (Some(ran), None) => format!("Running for {ran}."),
            _ => "Running.".to_owned(),
        },
        TaskStatus::Paused => "Paused; resume it with send_task_control.".to_owned(),
        TaskStatus::InputRequired => {
            "Waiting for your answer (see pending_input; reply with send_task_message).".to_owned()
        }
        TaskStatus::Completed => match &latest {
            Some(latest) => format!("Completed in {}. Last: {latest}", ran.unwrap_or_default()),
            None => format!("Completed in {}.", ran.unwrap_or_default()),
        },
        other => {
            let how = match other {
                TaskStatus::Failed => "Failed",
                TaskStatus::Timeout => "Timed out",
                _ => "Cancelled",
            };
            match (ran, error) {
                (Some(ran), Some(error)) => format!("{how} after {ran}: {error}"),
                (None, Some(error)) => format!("{how}: {error}"),
                (Some(ran), None) => format!("{how} after {ran}."),
                (None, None) => format!("{how}."),
            }
        }
    };
    format!("{title} — {state}")
}

/// A JSON value with every string clipped, so a verdict's long reasons stay short.
fn clip_json(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(clip_chars(s, DETAIL_CHARS)),
        Value::Array(items) => Value::Array(items.iter().take(10).map(clip_json).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), clip_json(v))).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_task::TaskStatus;
    use serde_json::json;

    use super::*;
    use crate::fixtures::snapshot;

    #[test]
    fn a_tool_call_is_one_event_and_a_policy_allow_none() {
        let mut overview = snapshot(TaskStatus::Running, "fix it", 4);
        let steps = [
            (
                EventKind::Tool,
                json!({"call_id": "a", "status": "pending", "input": {"command": "ls"}}),
            ),
            (
                EventKind::Tool,
                json!({"call_id": "a", "status": "running", "input": {"command": "ls"}}),
            ),
            (
                EventKind::Input,
                json!({"state": "answered", "decision": "allow", "by": "policy (rules)"}),
            ),
            (
                EventKind::Tool,
                json!({"call_id": "a", "status": "completed", "input": {"command": "ls"}}),
            ),
        ];
        for (event, (kind, data)) in overview.recent_events.iter_mut().zip(steps) {
            event.kind = kind;
            event.data = data;
        }
        let value = WorkspaceValue::from_snapshot(&overview);
        let kinds: Vec<String> = value
            .recent_events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap()["kind"].to_string())
            .collect();
        assert_eq!(kinds, ["\"tool\""], "{:?}", value.recent_events);
    }

    #[test]
    fn model_usage_carries_tokens_and_cost_when_the_task_called_a_model() {
        let mut overview = snapshot(TaskStatus::Running, "fix it", 2);
        let value = serde_json::to_value(WorkspaceValue::from_snapshot(&overview)).unwrap();
        assert!(value.get("model_usage").is_none(), "{value}");
        overview.model_usage = Some(ModelUsage {
            calls: 2,
            input_tokens: 1_000,
            output_tokens: 234,
            cached_tokens: 100,
            cost_usd: 0.1 + 0.2,
        });
        let value = serde_json::to_value(WorkspaceValue::from_snapshot(&overview)).unwrap();
        assert_eq!(
            value["model_usage"],
            json!({"tokens": 1_234, "cost_usd": 0.3})
        );
    }
}
