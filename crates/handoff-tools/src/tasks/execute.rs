use std::time::{Duration, Instant};

use handoff_engine::{Engine, EngineError, ResultWait, SubmitRequest, Submitted};
use handoff_protocol::{
    names,
    tasks::{ExecuteTaskArgs, ExecuteTaskOutput},
};
use handoff_task::{ObserverId, Principal, Task, TaskStatus};
use serde_json::Value;

use super::{
    caller,
    closing::{Closing, closing, tool_call_line},
    continue_task::{FOLLOW_UP, follow_up_of},
    failure::tool_error,
    outlook,
    repeats::RepeatedSubmissions,
    text::{self, Outlook},
};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

/// How often a `sync` call reports progress while it waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// `execute_task` (alias `opencode_execute_task`): hands a development task to an executor.
pub struct ExecuteTaskTool {
    engine: Engine,
    sync_wait: Duration,
    async_allowed: bool,
    repeats: RepeatedSubmissions,
}

impl ExecuteTaskTool {
    /// A tool submitting to `engine`, refusing identical submissions as `repeats` says.
    pub fn new(
        engine: Engine,
        sync_wait: Duration,
        async_allowed: bool,
        repeats: RepeatedSubmissions,
    ) -> Self {
        Self {
            engine,
            sync_wait,
            async_allowed,
            repeats,
        }
    }
}

impl Tool for ExecuteTaskTool {
    type Args = ExecuteTaskArgs;
    type Output = ExecuteTaskOutput;

    fn name(&self) -> &'static str {
        names::EXECUTE_TASK
    }

    fn aliases(&self) -> &'static [&'static str] {
        names::EXECUTE_TASK_ALIASES
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
    ) -> Result<Reply<ExecuteTaskOutput>, ToolError> {
        let name = self.name();
        let caller = caller(&ctx, name)?;
        // An operator submits for the agent its `agent_id` argument names (for itself when it
        // names none): the argument is then whose task it is, not who calls.
        let agent = match (&caller, &args.agent_id) {
            (Principal::Operator(_), Some(owner)) => owner.clone(),
            _ => caller.name().clone(),
        };
        // A task-handle caller polls by itself; waiting here would only hold its request open.
        let sync = !ctx.task_handle && (args.sync.unwrap_or(false) || !self.async_allowed);
        if let Some((id, request)) = follow_up_of(name, &args)? {
            let receipt = self
                .engine
                .message(&caller, &id, FOLLOW_UP, request, None)
                .await
                .map_err(|e| tool_error(name, e))?;
            let submitted = Submitted {
                task: receipt.task,
                created: false,
                queue_position: None,
            };
            return self
                .answer(&ctx, &caller, submitted, sync, None, Some(receipt.note))
                .await;
        }
        let repeat_guard = Some(self.repeats.guard(&args)?);
        let request = SubmitRequest {
            repeat_guard,
            ..submit_request(args)
        };
        // Held while this call waits for the result: integrations that would repeat the
        // result to the caller (Letta's completion message) wait for it to end.
        let mut result_wait = None;
        // Only the owner reading its own result makes the owner's notification redundant: an
        // operator submitting for it leaves the owner to be told.
        let owner_waits =
            sync && caller.name() == &agent && !matches!(caller, Principal::Operator(_));
        let submitted = if owner_waits {
            let awaited = self.engine.submit_awaited(&agent, request).await;
            awaited.map(|(submitted, wait)| {
                result_wait = Some(wait);
                submitted
            })
        } else {
            self.engine.submit(&agent, request).await
        };
        let submitted = submitted.map_err(|e| match e {
            EngineError::Repeated { active } => self.repeats.refusal(&active),
            other => tool_error(name, other),
        })?;
        ctx.task_created(&agent, &submitted.task.id);
        self.answer(&ctx, &caller, submitted, sync, result_wait, None)
            .await
    }
}

impl ExecuteTaskTool {
    /// The call's answer for `submitted` (a new task, an earlier one with the same key, or a
    /// continued one, whose engine note is `follow_up`), after waiting for its end when `sync`.
    async fn answer(
        &self,
        ctx: &ToolContext,
        caller: &Principal,
        submitted: Submitted,
        sync: bool,
        result_wait: Option<ResultWait>,
        follow_up: Option<String>,
    ) -> Result<Reply<ExecuteTaskOutput>, ToolError> {
        let name = self.name();
        let mut task = submitted.task;
        let mut queue_position = submitted.queue_position;
        let mut waited = None;
        if sync && !task.status.is_terminal() {
            let started = Instant::now();
            task = self.wait_for_end(ctx, caller, task).await?;
            waited = Some(started.elapsed());
            if task.status != TaskStatus::Queued {
                queue_position = None;
            }
        }
        let ending = if sync && task.status.is_terminal() {
            closing(&self.engine, caller, &task.id)
                .await
                .map_err(|e| tool_error(name, e))?
        } else {
            Closing::default()
        };
        let message = match (task.status, submitted.created) {
            (s, _) if s.is_terminal() => finished_message(&task),
            _ if follow_up.is_some() => {
                let note = follow_up.unwrap_or_default();
                format!("{note}; poll get_task_status with this task_id")
            }
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
        let output = ExecuteTaskOutput::for_task(
            &task,
            submitted.created,
            queue_position,
            message,
            ending.output_tail,
        )
        .with_answer(ending.answer.clone());
        let outlook = outlook(ctx, caller, &task, ending.answer);
        let text = text::execute(&output, &outlook, waited);
        if let Some(wait) = result_wait
            && task.status.is_terminal()
            && !ctx.cancel.is_cancelled()
        {
            // Unrecorded, the delivery is forgotten: the caller may be told again, never not.
            if let Err(e) = wait.delivered().await {
                tracing::warn!(task = %task.id, error = %e, "cannot record that the result was delivered");
            }
        }
        Ok(Reply::new(output, text))
    }

    /// Waits for `task` to end, at most the sync limit (and never past the caller's own
    /// deadline), reporting progress while it waits; the task as it stands then.
    async fn wait_for_end(
        &self,
        ctx: &ToolContext,
        caller: &Principal,
        mut task: Task,
    ) -> Result<Task, ToolError> {
        let name = self.name();
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
                waited = self.engine.wait(caller, &task.id, step) => waited,
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled { tool: name.to_owned() }),
            };
            task = waited.map_err(|e| tool_error(name, e))?;
            if task.status.is_terminal() || Instant::now() >= until {
                return Ok(task);
            }
            // A heartbeat the client can show, and a sign of life on long waits: what the agent
            // is doing, not only that it runs.
            let doing = self
                .engine
                .last_tool_call(caller, &task.id)
                .await
                .ok()
                .flatten()
                .map(|call| tool_call_line(&call));
            let message = match doing {
                Some(call) => format!(
                    "task {} is {}; last tool call: {call}",
                    task.id, task.status
                ),
                None => format!("task {} is {}", task.id, task.status),
            };
            ctx.progress(message).await;
        }
    }
}

/// What a `sync` call that saw `task` finish returns — also the result of a finished MCP Tasks
/// handle, so both flows answer alike.
pub(crate) async fn finished_output(
    engine: &Engine,
    task: &Task,
) -> Result<Reply<ExecuteTaskOutput>, EngineError> {
    let owner = Principal::Agent(task.agent_id.clone());
    let ending = closing(engine, &owner, &task.id).await?;
    let output =
        ExecuteTaskOutput::for_task(task, true, None, finished_message(task), ending.output_tail)
            .with_answer(ending.answer.clone());
    let outlook = Outlook {
        answer: ending.answer,
        ..Outlook::default()
    };
    let text = text::execute(&output, &outlook, None);
    Ok(Reply::new(output, text))
}

/// What the engine is asked to queue.
fn submit_request(args: ExecuteTaskArgs) -> SubmitRequest {
    let observers = args.observers.unwrap_or_default();
    SubmitRequest {
        description: args.task_description,
        executor: args.executor,
        workdir: args.workdir,
        idempotency_key: args.idempotency_key,
        timeout_ms: args.timeout_ms,
        priority: args.priority,
        observers: observers
            .iter()
            .filter_map(|o| match o {
                ObserverId::Agent(a) => Some(a.clone()),
                ObserverId::Matrix(_) => None,
            })
            .collect(),
        matrix_observers: observers
            .iter()
            .filter_map(|o| match o {
                ObserverId::Matrix(m) => Some(m.clone()),
                ObserverId::Agent(_) => None,
            })
            .collect(),
        metadata: args.metadata.map(Value::Object),
        requeue_on_restart: args.requeue_on_restart,
        branch: args.branch,
        base: args.base,
        notify: args.notify,
        permissions: args
            .permissions
            .unwrap_or_default()
            .into_iter()
            .map(Into::into)
            .collect(),
        completion: args.completion,
        delivery: args.delivery,
        repeat_guard: None,
    }
}

fn finished_message(task: &Task) -> String {
    format!("task {}: {}", task.id, task.status)
}
