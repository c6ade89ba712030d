use std::time::{Duration, Instant};

use handoff_engine::{Engine, EngineError, SubmitRequest};
use handoff_task::{EventKind, ExitInfo, Task, TaskStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{caller, failure::tool_error};
use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// How often a `sync` call reports progress while it waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Output lines a finished `sync` call returns.
const OUTPUT_TAIL_LINES: u32 = 20;

/// Arguments of `execute_task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteTaskArgs {
    /// Calling agent (defaults to the x-agent-id header); the task belongs to it.
    pub agent_id: Option<AgentId>,
    /// What the coding agent should do, in plain language.
    #[schemars(length(min = 1))]
    pub task_description: String,
    /// Which executor runs the task (default: the server's default executor).
    #[schemars(length(min = 1, max = 64))]
    pub executor: Option<String>,
    /// An existing absolute directory, inside a root the server allows, to work in (default: a
    /// fresh directory for this task).
    #[schemars(length(min = 1, max = 4096))]
    pub workdir: Option<String>,
    /// Submitting the same key again (same agent, within 24 h) returns the same task.
    #[schemars(length(min = 1, max = 256))]
    pub idempotency_key: Option<String>,
    /// Deadline in milliseconds, counted from the start of the run.
    #[schemars(range(min = 1, max = 86_400_000))]
    pub timeout_ms: Option<u64>,
    /// Wait for the result (up to the server's sync limit) instead of returning at once.
    pub sync: Option<bool>,
    /// Higher runs first (default 0).
    #[schemars(range(min = -100, max = 100))]
    pub priority: Option<i32>,
    /// Other agents that follow this task.
    #[schemars(length(max = 16))]
    pub observers: Option<Vec<AgentId>>,
    /// Free-form JSON object kept with the task.
    pub metadata: Option<Map<String, Value>>,
    /// After a server crash, run the task again from the start instead of failing it.
    pub requeue_on_restart: Option<bool>,
    /// When the task ends, send your Letta agent one message saying so (default true; the
    /// workspace memory block is kept current either way).
    pub notify: Option<bool>,
    /// Your own permission rules for this task's executor, after the server's (last match
    /// wins): they can make it stricter (deny or ask), never lift a deny the server set.
    #[schemars(length(max = 100))]
    pub permissions: Option<Vec<TaskRule>>,
    /// How Handoff verifies the task is really done before reporting `completed` (the server's
    /// settings where unset): `policy` none|checks|judge|manager, `verify_commands` that must
    /// pass, `requires_changes`, `success_criteria` for the judge, `max_cycles`, `budget`.
    pub completion: Option<handoff_task::CompletionSpec>,
}

/// One of the caller's permission rules for a task.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRule {
    /// The permission (`bash`, `edit`, `read`, `webfetch` … or `*`).
    #[schemars(length(min = 1, max = 64))]
    pub permission: String,
    /// A command (`rm *`) or path (`src/**`) wildcard; `*` when omitted.
    #[schemars(length(min = 1, max = 1024))]
    pub pattern: Option<String>,
    /// What to do.
    pub action: TaskRuleAction,
}

/// What a caller's rule does.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskRuleAction {
    /// Go ahead (only where the server's rules allow or ask).
    Allow,
    /// Ask the task's owner first.
    Ask,
    /// Refuse.
    Deny,
}

impl From<TaskRule> for handoff_policy::PermissionRule {
    fn from(rule: TaskRule) -> Self {
        let action = match rule.action {
            TaskRuleAction::Allow => handoff_policy::PermissionAction::Allow,
            TaskRuleAction::Ask => handoff_policy::PermissionAction::Ask,
            TaskRuleAction::Deny => handoff_policy::PermissionAction::Deny,
        };
        handoff_policy::PermissionRule::new(
            &rule.permission,
            rule.pattern.as_deref().unwrap_or("*"),
            action,
        )
    }
}

/// Result of `execute_task`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
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
}

/// `execute_task` (alias `opencode_execute_task`): hands a development task to an executor.
pub struct ExecuteTaskTool {
    engine: Engine,
    sync_wait: Duration,
    async_allowed: bool,
}

impl ExecuteTaskTool {
    /// A tool submitting to `engine`.
    pub fn new(engine: Engine, sync_wait: Duration, async_allowed: bool) -> Self {
        Self {
            engine,
            sync_wait,
            async_allowed,
        }
    }
}

impl Tool for ExecuteTaskTool {
    type Args = ExecuteTaskArgs;
    type Output = ExecuteTaskOutput;

    fn name(&self) -> &'static str {
        "execute_task"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["opencode_execute_task"]
    }

    fn description(&self) -> &'static str {
        "Hand a development task to a coding agent that runs in its own working directory. \
         Returns a task_id at once (status queued or running); follow it with get_task_status, \
         steer it with send_task_message / send_task_control, and read its results with \
         get_task_history and get_task_files. With sync=true the call waits up to the server's \
         limit and then returns the outcome, or status running with a hint to poll."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            open_world: true,
            ..ToolAnnotations::default()
        }
    }

    async fn call(
        &self,
        ctx: ToolContext,
        args: ExecuteTaskArgs,
    ) -> Result<ExecuteTaskOutput, ToolError> {
        let name = self.name();
        let agent = caller(name, args.agent_id)?;
        // A task-handle caller polls by itself; waiting here would only hold its request open.
        let sync = !ctx.task_handle && (args.sync.unwrap_or(false) || !self.async_allowed);
        let request = SubmitRequest {
            description: args.task_description,
            executor: args.executor,
            workdir: args.workdir,
            idempotency_key: args.idempotency_key,
            timeout_ms: args.timeout_ms,
            priority: args.priority,
            observers: args.observers.unwrap_or_default(),
            metadata: args.metadata.map(Value::Object),
            requeue_on_restart: args.requeue_on_restart.unwrap_or(false),
            notify: args.notify,
            permissions: args
                .permissions
                .unwrap_or_default()
                .into_iter()
                .map(Into::into)
                .collect(),
            completion: args.completion,
        };
        let submitted = self
            .engine
            .submit(&agent, request)
            .await
            .map_err(|e| tool_error(name, e))?;
        ctx.task_created(&agent, &submitted.task.id);
        let mut task = submitted.task;
        let mut queue_position = submitted.queue_position;
        if sync && !task.status.is_terminal() {
            // Answer before the caller's own deadline would cut the call off.
            let limit = match ctx.deadline {
                Some(deadline) => self.sync_wait.min(
                    deadline
                        .saturating_duration_since(Instant::now())
                        .saturating_sub(Duration::from_secs(1)),
                ),
                None => self.sync_wait,
            };
            let until = Instant::now() + limit;
            loop {
                let step = PROGRESS_EVERY.min(until.saturating_duration_since(Instant::now()));
                let waited = tokio::select! {
                    waited = self.engine.wait(&agent, &task.id, step) => waited,
                    () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled { tool: name.to_owned() }),
                };
                task = waited.map_err(|e| tool_error(name, e))?;
                if task.status.is_terminal() || Instant::now() >= until {
                    break;
                }
                // A heartbeat the client can show, and a sign of life on long waits.
                ctx.progress(format!("task {} is {}", task.id, task.status))
                    .await;
            }
            if task.status != TaskStatus::Queued {
                queue_position = None;
            }
        }
        let output_tail = if sync && task.status.is_terminal() {
            output_tail(&self.engine, &agent, &task.id)
                .await
                .map_err(|e| tool_error(name, e))?
        } else {
            Vec::new()
        };
        let message = match (task.status, submitted.created) {
            (s, _) if s.is_terminal() => finished_message(&task),
            (_, false) => format!(
                "an earlier submission with this idempotency key is task {}; poll get_task_status",
                task.id
            ),
            (_, true) if sync => format!(
                "still {} after {}s; poll get_task_status with this task_id",
                task.status,
                self.sync_wait.as_secs()
            ),
            _ => "accepted; poll get_task_status with this task_id".to_owned(),
        };
        Ok(ExecuteTaskOutput::of(
            &task,
            submitted.created,
            queue_position,
            message,
            output_tail,
        ))
    }
}

impl ExecuteTaskOutput {
    /// The output for `task` as it stands.
    fn of(
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
            duration_ms: task.duration_ms(handoff_task::unix_millis_now()),
            exit: task.exit,
            error: task.error.clone(),
            output_tail,
        }
    }

    /// What a `sync` call that saw `task` finish returns — also the result of a finished MCP
    /// Tasks handle, so both flows answer alike.
    pub(crate) async fn finished(engine: &Engine, task: &Task) -> Result<Self, EngineError> {
        let output_tail = output_tail(engine, &task.agent_id, &task.id).await?;
        Ok(Self::of(
            task,
            true,
            None,
            finished_message(task),
            output_tail,
        ))
    }
}

fn finished_message(task: &Task) -> String {
    format!("task {}: {}", task.id, task.status)
}

/// The last output lines of a task.
async fn output_tail(
    engine: &Engine,
    agent: &AgentId,
    id: &handoff_task::TaskId,
) -> Result<Vec<String>, EngineError> {
    // Output lines sit just before the final status event; a window a bit larger than the
    // tail covers the few lifecycle events after them.
    let events = engine
        .recent_events(agent, id, OUTPUT_TAIL_LINES + 10)
        .await?;
    let mut lines: Vec<String> = events
        .iter()
        .filter(|e| e.kind == EventKind::Output)
        .map(|e| super::views::clip(&e.message, super::views::EVENT_MESSAGE_CHARS))
        .collect();
    let skip = lines.len().saturating_sub(OUTPUT_TAIL_LINES as usize);
    lines.drain(..skip);
    Ok(lines)
}
