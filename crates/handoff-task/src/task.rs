use std::{
    fmt,
    str::FromStr,
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AgentId, TaskId, TaskStatus};

/// Milliseconds since the Unix epoch, the unit every stored timestamp uses.
pub fn unix_millis_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Per-task settings chosen at submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskOptions {
    /// Deadline, from the moment the task starts running.
    pub timeout_ms: u64,
    /// After a server crash, run again from the start instead of failing.
    #[serde(default)]
    pub requeue_on_restart: bool,
    /// Agents that follow this task besides its owner (notifications, later issues).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<AgentId>,
    /// People in Matrix invited to the task's room (read only unless a controller).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matrix_observers: Vec<crate::MatrixUserId>,
    /// The working directory was given by the caller (Handoff must not delete it).
    #[serde(default)]
    pub caller_workdir: bool,
    /// The caller's own permission rules for this task (they tighten, never lift, the
    /// operator's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<crate::PermissionRule>,
    /// Tell the owning Letta agent when the task ends (one message); `false` opts out.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub notify: bool,
    /// How the caller wants completion verified (server defaults where unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<crate::CompletionSpec>,
    /// The branch the task works on in the configured repository (unset: Handoff names one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// What that branch starts from (unset: the repository's HEAD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// What to do with the branch when a round ends completed (unset: the server's
    /// `tasks.delivery`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<crate::Delivery>,
    /// The caller's repository the task's worktree was made from, when the caller's `workdir`
    /// was a git work tree (unset: the configured repository, if any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Which round of work this is: 1 for the submitted task, one more for each follow-up
    /// that continued it after it ended.
    #[serde(default = "first_round", skip_serializing_if = "is_first_round")]
    pub round: u32,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            timeout_ms: 0,
            requeue_on_restart: false,
            observers: Vec::new(),
            matrix_observers: Vec::new(),
            caller_workdir: false,
            permissions: Vec::new(),
            notify: true,
            completion: None,
            branch: None,
            base: None,
            delivery: None,
            repository: None,
            round: 1,
        }
    }
}

fn yes() -> bool {
    true
}

fn first_round() -> u32 {
    1
}

fn is_first_round(round: &u32) -> bool {
    *round <= 1
}

fn is_true(b: &bool) -> bool {
    *b
}

/// How a finished process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExitInfo {
    /// Exit code, when it exited normally.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Unguessable id.
    pub id: TaskId,
    /// The agent that submitted it (the only one that may see it).
    pub agent_id: AgentId,
    /// What to do, as submitted.
    pub description: String,
    /// Which executor runs it.
    pub executor: String,
    /// Per-task settings.
    pub options: TaskOptions,
    /// Current state.
    pub status: TaskStatus,
    /// Higher runs first; FIFO within a priority.
    pub priority: i32,
    /// Submission order, for FIFO.
    pub queue_seq: i64,
    /// Working directory.
    pub workdir: String,
    /// Submission time (Unix ms).
    pub created_at: i64,
    /// When an executor first started it.
    pub started_at: Option<i64>,
    /// When it reached a terminal state.
    pub completed_at: Option<i64>,
    /// How its process ended.
    pub exit: Option<ExitInfo>,
    /// Why it failed, timed out or was cancelled.
    pub error: Option<String>,
    /// The caller's idempotency key.
    pub idempotency_key: Option<String>,
    /// Free-form caller metadata (a JSON object).
    pub metadata: Value,
    /// What a restarted server needs to find the executor's work again (pids, session ids).
    pub runner_state: Option<Value>,
    /// When the final result reached the caller inside its submitting call (`sync`), if it did.
    pub result_delivered_at: Option<i64>,
    /// Which instance runs it and until when, while one does.
    pub lease: Option<Lease>,
    /// The fencing token: incremented at each claim and each change of owner, so a write of an
    /// instance that lost the task can be told from its successor's.
    pub fence: i64,
}

/// An instance's hold on a running task, renewed with its heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The instance id.
    pub owner: String,
    /// When the lease runs out unless renewed (Unix ms).
    pub until: i64,
}

impl Task {
    /// Milliseconds between start and end (or now, while it runs).
    pub fn duration_ms(&self, now: i64) -> Option<i64> {
        self.started_at
            .map(|start| self.completed_at.unwrap_or(now).saturating_sub(start))
    }
}

/// A task about to be stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// Fresh id.
    pub id: TaskId,
    /// Submitting agent.
    pub agent_id: AgentId,
    /// What to do.
    pub description: String,
    /// Executor name.
    pub executor: String,
    /// Per-task settings.
    pub options: TaskOptions,
    /// Scheduling priority.
    pub priority: i32,
    /// Working directory.
    pub workdir: String,
    /// Submission time.
    pub created_at: i64,
    /// Idempotency key.
    pub idempotency_key: Option<String>,
    /// Caller metadata.
    pub metadata: Value,
    /// Refuses this task while too many identical submissions are still active.
    pub repeat_guard: Option<RepeatGuard>,
}

/// The `execute_task` loop guard, judged by the store as the task is inserted so that every
/// instance sharing it counts the same submissions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatGuard {
    /// What makes two submissions of one agent identical (a digest of the call's arguments).
    pub key: String,
    /// Refused from this many active identical submissions, this one included.
    pub limit: u32,
    /// Only submissions this many ms before this one count.
    pub window_ms: i64,
}

/// What kind of message an agent sends into a task (names kept from the older server).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    /// New information.
    #[default]
    Update,
    /// Feedback on work so far.
    Feedback,
    /// The surrounding situation changed.
    ContextChange,
    /// What is wanted changed.
    RequirementChange,
    /// The task matters more or less now.
    PriorityChange,
    /// An answer to a question.
    Clarification,
    /// Something done was wrong.
    Correction,
    /// Advice on how to proceed.
    Guidance,
    /// A go-ahead.
    Approval,
}

impl MessageType {
    /// Every type.
    pub const ALL: [MessageType; 9] = [
        MessageType::Update,
        MessageType::Feedback,
        MessageType::ContextChange,
        MessageType::RequirementChange,
        MessageType::PriorityChange,
        MessageType::Clarification,
        MessageType::Correction,
        MessageType::Guidance,
        MessageType::Approval,
    ];

    /// The type's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageType::Update => "update",
            MessageType::Feedback => "feedback",
            MessageType::ContextChange => "context_change",
            MessageType::RequirementChange => "requirement_change",
            MessageType::PriorityChange => "priority_change",
            MessageType::Clarification => "clarification",
            MessageType::Correction => "correction",
            MessageType::Guidance => "guidance",
            MessageType::Approval => "approval",
        }
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MessageType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown message type {s:?}"))
    }
}
