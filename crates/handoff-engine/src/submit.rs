use std::{path::PathBuf, time::Duration};

use handoff_store::{IdempotencyClaim, InsertOutcome};
use handoff_task::{AgentId, NewTask, Principal, Task, TaskId, TaskOptions, unix_millis_now};
use serde_json::Value;

use crate::{Engine, EngineError, ResultWait};

/// Largest accepted metadata object, serialized.
const MAX_METADATA_BYTES: usize = 16 << 10;
/// Longest accepted task deadline.
const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// A task submission, as `execute_task` receives it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubmitRequest {
    /// What to do.
    pub description: String,
    /// Executor name (default from config).
    pub executor: Option<String>,
    /// A caller-chosen working directory inside an allowed root.
    pub workdir: Option<String>,
    /// Submitting the same key again within the window returns the same task.
    pub idempotency_key: Option<String>,
    /// Deadline (default from config).
    pub timeout_ms: Option<u64>,
    /// Higher runs first.
    pub priority: Option<i32>,
    /// Other agents following the task.
    pub observers: Vec<AgentId>,
    /// People in Matrix invited to the task's room.
    pub matrix_observers: Vec<handoff_task::MatrixUserId>,
    /// Free-form metadata (a JSON object).
    pub metadata: Option<Value>,
    /// Run again after a server stop or crash instead of failing (unset: `tasks.requeue_on_restart`).
    pub requeue_on_restart: Option<bool>,
    /// The new branch the task works on in the configured repository (unset: Handoff's name).
    pub branch: Option<String>,
    /// What that branch starts from (unset: the repository's HEAD).
    pub base: Option<String>,
    /// What happens to the branch when a round ends completed (unset: `tasks.delivery`).
    pub delivery: Option<handoff_task::Delivery>,
    /// Tell the owning Letta agent when the task ends (unset: yes; `false` opts out).
    pub notify: Option<bool>,
    /// The caller's own permission rules for this task (they cannot lift an operator's deny).
    pub permissions: Vec<handoff_policy::PermissionRule>,
    /// How the task's completion is verified (the server's settings where unset).
    pub completion: Option<handoff_task::CompletionSpec>,
    /// Refuses the submission while too many identical ones are unfinished (judged by the
    /// store, so across every instance sharing it).
    pub repeat_guard: Option<handoff_task::RepeatGuard>,
}

/// The answer to a submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    /// The task (new, or the earlier one with the same idempotency key).
    pub task: Task,
    /// False when an idempotency key matched an earlier submission.
    pub created: bool,
    /// Position in the queue, while queued.
    pub queue_position: Option<u64>,
}

impl Engine {
    /// Validates and stores a task; the scheduler starts it when a slot is free.
    pub async fn submit(
        &self,
        agent: &AgentId,
        req: SubmitRequest,
    ) -> Result<Submitted, EngineError> {
        Ok(self.submit_as(agent, req, false).await?.0)
    }

    /// [`Engine::submit`]; with `awaited`, a new task comes with the caller's open
    /// [`ResultWait`], opened before the task is stored.
    pub(crate) async fn submit_as(
        &self,
        agent: &AgentId,
        req: SubmitRequest,
        awaited: bool,
    ) -> Result<(Submitted, Option<ResultWait>), EngineError> {
        let inner = &self.inner;
        let limits = &inner.config.tasks;
        let checked = self.checked(&req)?;
        let id =
            TaskId::generate().map_err(|e| EngineError::Internal(format!("no randomness: {e}")))?;
        let (workdir, caller_workdir, repository) = self.workdir_of(&id, &req).await?;
        let repo = inner.workdirs.repository_for(&TaskOptions {
            caller_workdir,
            repository: repository.clone(),
            ..TaskOptions::default()
        });
        crate::branch::check_request(
            repo.as_deref(),
            caller_workdir,
            req.branch.as_deref(),
            req.base.as_deref(),
        )
        .await?;
        if req.delivery == Some(handoff_task::Delivery::Push) && repo.is_none() {
            return Err(EngineError::invalid(
                "delivery",
                "push needs a task on a branch: a workdir that is a git work tree, or \
                 tasks.git_repository on the server",
            ));
        }
        // The branch is named now, so every view of the task shows it from the start.
        let branch = repo.is_some().then(|| {
            req.branch
                .clone()
                .unwrap_or_else(|| crate::worktree::default_branch(&id, &req.description))
        });
        let now = unix_millis_now();
        let window = i64::try_from(limits.idempotency_window.as_millis()).unwrap_or(i64::MAX);
        let claim = req
            .idempotency_key
            .clone()
            .filter(|_| inner.config.features.enforce_idempotency)
            .map(|key| IdempotencyClaim {
                key,
                not_before: now.saturating_sub(window),
            });
        // A replay of an earlier submission is an answer, not a new submission: it costs no
        // rate-limit token (the insert below repeats the check race-free).
        if let Some(claim) = &claim
            && let Some(task) = inner.store.find_idempotent(agent, claim).await?
        {
            return Ok((self.submitted(task, false).await?, None));
        }
        let task = NewTask {
            id,
            agent_id: agent.clone(),
            description: req.description,
            executor: checked.executor,
            options: TaskOptions {
                timeout_ms: checked.timeout_ms,
                requeue_on_restart: req
                    .requeue_on_restart
                    .unwrap_or(inner.config.tasks.requeue_on_restart),
                observers: req.observers,
                matrix_observers: req.matrix_observers,
                caller_workdir,
                permissions: req.permissions,
                notify: req.notify.unwrap_or(true),
                completion: req.completion,
                branch,
                base: req.base,
                delivery: req.delivery,
                repository,
                round: 1,
            },
            priority: req.priority.unwrap_or(0),
            workdir: workdir.display().to_string(),
            created_at: now,
            idempotency_key: req.idempotency_key,
            metadata: checked.metadata,
            repeat_guard: req.repeat_guard,
        };
        // A repeat refused before its token is taken: the refusal costs a failed call's
        // token, as any refused call does, not a submission's as well.
        if let Some(active) = inner.store.find_repeated(&task).await? {
            inner.metrics.refused("repeated");
            return Err(EngineError::Repeated { active });
        }
        if let Err(wait) = inner.rate.take(&*inner.store, agent.as_str()).await? {
            inner.metrics.refused("rate_limited");
            return Err(EngineError::RateLimited {
                agent: agent.to_string(),
                retry_after: wait,
            });
        }
        self.insert(&task, claim.as_ref(), awaited).await
    }

    /// Where task `id` works: a caller's directory as it is, a worktree of the caller's
    /// repository when that directory is a git work tree (its checkout is never touched), or
    /// a directory of Handoff's own. Also whether the caller chose it, and that repository.
    async fn workdir_of(
        &self,
        id: &TaskId,
        req: &SubmitRequest,
    ) -> Result<(PathBuf, bool, Option<String>), EngineError> {
        let workdirs = &self.inner.workdirs;
        let Some(requested) = &req.workdir else {
            return Ok((workdirs.for_task(id), false, None));
        };
        let dir = workdirs.caller_chosen(requested)?;
        Ok(match workdirs.caller_repository(&dir).await {
            Some(repo) => (
                workdirs.for_task(id),
                false,
                Some(repo.display().to_string()),
            ),
            None => (dir, true, None),
        })
    }

    /// What a submission settles before anything is stored: its description, completion,
    /// executor, timeout and metadata, each checked.
    fn checked(&self, req: &SubmitRequest) -> Result<Checked, EngineError> {
        let inner = &self.inner;
        let limits = &inner.config.tasks;
        if req.description.trim().is_empty() {
            return Err(EngineError::invalid(
                "task_description",
                "must not be empty",
            ));
        }
        let max = limits.max_description_bytes.bytes();
        if req.description.len() as u64 > max {
            return Err(EngineError::invalid(
                "task_description",
                format!(
                    "is {} bytes; the limit is {max} bytes (tasks.max_description_bytes) — put long material in files in the working directory instead",
                    req.description.len()
                ),
            ));
        }
        check_completion(
            &inner.config,
            inner.judge.is_some(),
            req.completion.as_ref(),
        )?;
        let executor = req
            .executor
            .clone()
            .unwrap_or_else(|| limits.default_executor.clone());
        if inner.executors.get(&executor).is_none() {
            return Err(executor_missing(
                &inner.executors,
                &executor,
                req.executor.is_none(),
            ));
        }
        if let Some(reason) = inner.executors.get(&executor).and_then(|e| e.unavailable()) {
            return Err(EngineError::invalid(
                "executor",
                format!("`{executor}` cannot run tasks here: {reason}"),
            ));
        }
        let timeout_ms = req.timeout_ms.unwrap_or_else(|| {
            u64::try_from(limits.default_timeout.as_millis()).unwrap_or(MAX_TIMEOUT_MS)
        });
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            return Err(EngineError::invalid(
                "timeout_ms",
                format!("must be between 1 and {MAX_TIMEOUT_MS}"),
            ));
        }
        let metadata = req
            .metadata
            .clone()
            .unwrap_or_else(|| Value::Object(Default::default()));
        check_metadata(&metadata)?;
        Ok(Checked {
            executor,
            timeout_ms,
            metadata,
        })
    }

    /// Stores `task` (or finds the earlier one its idempotency key names); with `awaited`, the
    /// caller's [`ResultWait`] is opened before the task is stored.
    async fn insert(
        &self,
        task: &NewTask,
        claim: Option<&IdempotencyClaim>,
        awaited: bool,
    ) -> Result<(Submitted, Option<ResultWait>), EngineError> {
        let inner = &self.inner;
        let wait = awaited.then(|| ResultWait::open(inner.shared(), task.id.clone()));
        let (task, created) = match inner
            .store
            .insert_task(task, claim, inner.config.tasks.max_queued)
            .await?
        {
            InsertOutcome::Created(task) => {
                inner.outbox.status(&task.id, task.status);
                inner.wake.notify_one();
                (task, true)
            }
            // The wait opened for the task not stored ends below; `submit_awaited` opens one on
            // the earlier task instead.
            InsertOutcome::Existing(task) => (task, false),
            InsertOutcome::Repeated { active } => {
                inner.metrics.refused("repeated");
                return Err(EngineError::Repeated { active });
            }
            InsertOutcome::QueueFull { queued } => {
                inner.metrics.refused("queue_full");
                // A slot frees roughly every average task duration; a few seconds is a fair hint.
                return Err(EngineError::QueueFull {
                    queued,
                    retry_after: Duration::from_secs(5),
                });
            }
        };
        let submitted = self.submitted(task, created).await?;
        Ok((submitted, wait.filter(|_| created)))
    }

    /// The answer to a submission of `task`, with its place in the queue.
    async fn submitted(&self, task: Task, created: bool) -> Result<Submitted, EngineError> {
        let queue_position = self.inner.store.queue_position(&task.id).await?;
        Ok(Submitted {
            task,
            created,
            queue_position,
        })
    }

    /// Waits up to `limit` for a task to finish; returns its latest state either way.
    pub async fn wait(
        &self,
        caller: &Principal,
        id: &TaskId,
        limit: Duration,
    ) -> Result<Task, EngineError> {
        self.readable(caller, id).await?;
        self.inner.wait_settled(id, limit).await
    }
}

/// Caller metadata (of a task or of a message): a JSON object of at most
/// [`MAX_METADATA_BYTES`] serialized.
pub(crate) fn check_metadata(metadata: &Value) -> Result<(), EngineError> {
    if !metadata.is_object() {
        return Err(EngineError::invalid("metadata", "must be a JSON object"));
    }
    let size = metadata.to_string().len();
    if size > MAX_METADATA_BYTES {
        return Err(EngineError::invalid(
            "metadata",
            format!("is {size} bytes serialized; at most {MAX_METADATA_BYTES}"),
        ));
    }
    Ok(())
}

/// Refuses a verification the server cannot perform, or settings it would silently ignore
/// (non-positive budget caps, empty verify commands), before anything is stored.
fn check_completion(
    config: &handoff_config::Config,
    has_judge: bool,
    spec: Option<&handoff_task::CompletionSpec>,
) -> Result<(), EngineError> {
    use handoff_task::CompletionPolicy;
    if let Some(error) = spec.and_then(|s| s.check().err()) {
        return Err(EngineError::invalid(error.field, error.message));
    }
    let policy = spec
        .and_then(|s| s.policy)
        .unwrap_or(config.completion.policy);
    match policy {
        CompletionPolicy::Judge | CompletionPolicy::Manager if !has_judge => {
            Err(EngineError::invalid(
                "completion",
                format!(
                    "policy `{}` needs an evaluator model: set evaluator.provider and evaluator.model",
                    policy.as_str()
                ),
            ))
        }
        _ => {
            if let Some(cycles) = spec.and_then(|s| s.max_cycles)
                && !(1..=50).contains(&cycles)
            {
                return Err(EngineError::invalid(
                    "completion",
                    "max_cycles must be 1 to 50",
                ));
            }
            Ok(())
        }
    }
}

/// Why `executor` cannot take a task. When the caller named none, the server's own default is
/// missing: that is the operator's to fix, so the error must not blame an argument.
fn executor_missing(
    executors: &handoff_runner::ExecutorRegistry,
    executor: &str,
    defaulted: bool,
) -> EngineError {
    let names = executors.names();
    let install = executors
        .missing(executor)
        .map(|how| format!(" ({how})"))
        .unwrap_or_default();
    if defaulted {
        let others = if names.is_empty() {
            "no other executor is available either".to_owned()
        } else {
            format!("executor {} can run tasks meanwhile", names.join(", "))
        };
        return EngineError::Unavailable(format!(
            "this server's default executor `{executor}` is not installed{install}; the server's \
             operator must set it up (`handoff doctor` says what is missing); {others}"
        ));
    }
    EngineError::invalid(
        "executor",
        match (names.is_empty(), executors.missing(executor)) {
            (_, Some(_)) => format!("`{executor}` is not installed on this server{install}"),
            (true, None) => format!(
                "`{executor}` is not available: this server has no executors configured (set executors.command.argv or HANDOFF_COMMAND_ARGV)"
            ),
            (false, None) => format!(
                "`{executor}` is not available; choose one of: {}",
                names.join(", ")
            ),
        },
    )
}

/// A submission's settings once checked.
struct Checked {
    executor: String,
    timeout_ms: u64,
    metadata: Value,
}
