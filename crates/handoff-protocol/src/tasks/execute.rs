//! `execute_task`: submit a task.

use handoff_task::{
    AgentId, CompletionSpec, Delivery, ExitInfo, ObserverId, PermissionAction, PermissionRule,
    Task, TaskId, TaskStatus, unix_millis_now,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{call::tool_call, names};

/// Arguments of `execute_task`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteTaskArgs {
    /// Calling agent (defaults to the x-agent-id header); the task belongs to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// What the coding agent should do, in plain language.
    #[schemars(length(min = 1))]
    pub task_description: String,
    /// Which executor runs the task (default: the server's default executor).
    #[schemars(length(min = 1, max = 64))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executor: Option<String>,
    /// An existing absolute directory, inside a root the server allows, to work in (default: a
    /// fresh directory for this task).
    #[schemars(length(min = 1, max = 4096))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// Submitting the same key again (same agent, within 24 h) returns the same task.
    #[schemars(length(min = 1, max = 256))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Deadline in milliseconds, counted from the start of the run.
    #[schemars(range(min = 1, max = 86_400_000))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Wait for the result (up to the server's sync limit) instead of returning at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<bool>,
    /// Higher runs first (default 0).
    #[schemars(range(min = -100, max = 100))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Who follows this task: other agents (agent ids), and people in Matrix (`@name:server`,
    /// invited to the task's Matrix room when the server has Matrix configured).
    #[schemars(length(max = 16))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observers: Option<Vec<ObserverId>>,
    /// Free-form JSON object kept with the task (at most 16 KiB serialized).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Where the server keeps a git repository for tasks: the new branch the task works and
    /// is committed on (default `handoff/<id>-<words of the description>`).
    #[schemars(length(max = 200))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Where the server keeps a git repository for tasks: the commit, branch or tag the task's
    /// branch starts from (default: the repository's HEAD).
    #[schemars(length(max = 200))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// For a task on a branch, what happens when a round ends completed: `branch` leaves the
    /// commits on it, `push` also pushes it to the server's remote and runs its after-push
    /// command (default: the server's `tasks.delivery`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Continue this earlier task of yours instead of starting a new one: `task_description`
    /// is the follow-up request; the task runs another round in the same directory, on the
    /// same branch (same as send_task_message to a finished task). Other settings are the
    /// task's own and cannot be given with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continue_task: Option<TaskId>,
    /// If Handoff stops or dies while the task runs, run it again from the start instead of
    /// failing it (default: the server's `tasks.requeue_on_restart`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_on_restart: Option<bool>,
    /// When the task ends, send your Letta agent one message saying so (default true; the
    /// workspace memory block is kept current either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify: Option<bool>,
    /// Your own permission rules for this task's executor, after the server's (last match
    /// wins): they can make it stricter (deny or ask), never lift a deny the server set.
    #[schemars(length(max = 100))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Vec<TaskRule>>,
    /// How Handoff verifies the task is really done before reporting `completed` (the server's
    /// settings where unset): `policy` none|checks|judge|manager, `verify_commands` that must
    /// pass, `requires_changes`, `success_criteria` for the judge, `max_cycles`, `budget`,
    /// `protected_paths` the coder must not change, `protected_changes_expected`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<CompletionSpec>,
}

/// One of the caller's permission rules for a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRule {
    /// The permission (`bash`, `edit`, `read`, `webfetch` … or `*`).
    #[schemars(length(min = 1, max = 64))]
    pub permission: String,
    /// A command (`rm *`) or path (`src/**`) wildcard; `*` when omitted.
    #[schemars(length(min = 1, max = 1024))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// What to do.
    pub action: TaskRuleAction,
}

/// What a caller's rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskRuleAction {
    /// Go ahead (only where the server's rules allow or ask).
    Allow,
    /// Ask the task's owner first.
    Ask,
    /// Refuse.
    Deny,
}

impl From<TaskRuleAction> for PermissionAction {
    fn from(action: TaskRuleAction) -> Self {
        match action {
            TaskRuleAction::Allow => PermissionAction::Allow,
            TaskRuleAction::Ask => PermissionAction::Ask,
            TaskRuleAction::Deny => PermissionAction::Deny,
        }
    }
}

impl From<TaskRule> for PermissionRule {
    fn from(rule: TaskRule) -> Self {
        PermissionRule::new(
            &rule.permission,
            rule.pattern.as_deref().unwrap_or("*"),
            rule.action.into(),
        )
    }
}

/// Result of `execute_task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecuteTaskOutput {
    /// The task's id; use it with the other task tools.
    pub task_id: String,
    /// Current state.
    pub status: TaskStatus,
    /// False when the idempotency key matched an earlier submission (this is that task).
    pub created: bool,
    /// Executor running it.
    pub executor: String,
    /// Working directory.
    pub workdir: String,
    /// Position in the queue, while queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<u64>,
    /// What to do next.
    pub message: String,
    /// Run time, once started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    /// How the process ended (finished sync calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<ExitInfo>,
    /// Why it failed, timed out or was cancelled (finished sync calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The last lines of output (finished sync calls; empty otherwise).
    pub output_tail: Vec<String>,
    /// What the coding agent wrote last, after its last tool call: its final answer (finished
    /// sync calls, when it wrote text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

impl ExecuteTaskOutput {
    /// The output for `task` as it stands now.
    pub fn for_task(
        task: &Task,
        created: bool,
        queue_position: Option<u64>,
        message: String,
        output_tail: Vec<String>,
    ) -> Self {
        Self {
            task_id: task.id.to_string(),
            status: task.status,
            created,
            executor: task.executor.clone(),
            workdir: task.workdir.clone(),
            queue_position,
            message,
            duration_ms: task.duration_ms(unix_millis_now()),
            exit: task.exit,
            error: task.error.clone(),
            output_tail,
            answer: None,
        }
    }

    /// The same output carrying the agent's final answer.
    pub fn with_answer(mut self, answer: Option<String>) -> Self {
        self.answer = answer.filter(|a| !a.trim().is_empty());
        self
    }
}

tool_call! {
    ExecuteTaskArgs => names::EXECUTE_TASK, ExecuteTaskOutput;
}
