use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::TaskId;

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The task changed state (`data.from`, `data.to`).
    Status,
    /// A line the executor printed (`data.stream`: stdout or stderr).
    Output,
    /// The executor's agent used a tool (`data.state`: started/finished/error).
    Tool,
    /// Text the executor's agent wrote.
    Text,
    /// A change to files (`data.diff`).
    Diff,
    /// Something went wrong inside the executor.
    Error,
    /// A message an agent sent into the task (`data.message_type`, `data.delivered`).
    Message,
    /// A control action (`data.control`: cancel/pause/resume).
    Control,
    /// An evaluator's verdict on whether the task is really done.
    Verdict,
    /// Handoff's own notes about the run (workdir prepared, process started, pid).
    Log,
    /// The executor asked for permission or an answer, or such a request was settled
    /// (`data.request`, `data.decision`).
    Input,
    /// A model call through Handoff's model gateway (`data.gateway_call`, and `data.total`:
    /// what the task's calls took so far, this one included).
    Model,
}

impl EventKind {
    /// Every kind.
    pub const ALL: [EventKind; 12] = [
        EventKind::Status,
        EventKind::Output,
        EventKind::Tool,
        EventKind::Text,
        EventKind::Diff,
        EventKind::Error,
        EventKind::Message,
        EventKind::Control,
        EventKind::Verdict,
        EventKind::Log,
        EventKind::Input,
        EventKind::Model,
    ];

    /// The kind's stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Status => "status",
            EventKind::Output => "output",
            EventKind::Tool => "tool",
            EventKind::Text => "text",
            EventKind::Diff => "diff",
            EventKind::Error => "error",
            EventKind::Message => "message",
            EventKind::Control => "control",
            EventKind::Verdict => "verdict",
            EventKind::Log => "log",
            EventKind::Input => "input",
            EventKind::Model => "model",
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown event kind {s:?}"))
    }
}

/// An event about to be appended.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// What it records.
    pub kind: EventKind,
    /// One human-readable line.
    pub message: String,
    /// Structured details (a JSON object).
    pub data: Value,
}

impl NewEvent {
    /// An event with no structured details.
    pub fn new(kind: EventKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            data: Value::Object(serde_json::Map::new()),
        }
    }

    /// Adds structured details.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }
}

/// An event as stored: append-only, numbered from 1 per task.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TaskEvent {
    /// The task it belongs to.
    pub task_id: TaskId,
    /// Position in the task's event log, from 1.
    pub seq: i64,
    /// When it was recorded (Unix ms).
    pub at: i64,
    /// What it records.
    pub kind: EventKind,
    /// One human-readable line.
    pub message: String,
    /// Structured details.
    pub data: Value,
}
