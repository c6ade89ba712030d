use std::{path::PathBuf, time::Duration};

use async_trait::async_trait;
use handoff_task::{ExitInfo, NewEvent, TaskId};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::{Claim, InputAnswer, InputRequest, RunnerError, fence::FenceTarget};

/// What an executor can do beyond start and cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Messages can reach a running task.
    pub messages: bool,
    /// Running tasks can be paused and resumed.
    pub pause: bool,
    /// A restarted server can re-attach to a run started before the crash.
    pub reattach: bool,
}

/// Everything an executor needs to start one task.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// The task.
    pub task_id: TaskId,
    /// The fencing token of the claim this run works under (`Task::fence`): with the task id
    /// it names the run's own OS resources ([`RunSpec::run_name`]).
    pub attempt: i64,
    /// The full prompt: the task description plus any messages sent while it was queued.
    pub prompt: String,
    /// The task's working directory (exists).
    pub workdir: PathBuf,
    /// The rules the executor may apply itself without asking Handoff (its static part);
    /// `None` keeps the executor's configured ruleset.
    pub preset_rules: Option<Vec<handoff_task::PermissionRule>>,
    /// The run may be continued after it ends ([`Executor::resume`]): the executor keeps its
    /// session until [`Executor::release`].
    pub continuable: bool,
    /// Variables the run's processes get on top of the executor's own (the model gateway's
    /// URLs and the run's token); they win over anything inherited.
    pub env: Vec<(String, String)>,
    /// Variables the run's processes must not get at all (the provider key the gateway holds).
    pub env_hidden: Vec<String>,
}

impl RunSpec {
    /// The name of this run's own cgroup, container and agent home: `<task_id>-r<attempt>`.
    /// A run of the same task under an earlier claim (an instance declared lost that comes
    /// back and stops "its" run) has another name, so it can never stop this one.
    pub fn run_name(&self) -> String {
        run_name(self.task_id.as_str(), self.attempt)
    }
}

/// The name of the resources of task `task_id`'s run under claim `attempt` (cgroup-safe: a
/// task id is `task_` and 26 of a-z 2-7, so the name stays far below 128 of A-Z a-z 0-9 _ -).
pub(crate) fn run_name(task_id: &str, attempt: i64) -> String {
    format!("{task_id}-r{attempt}")
}

/// Whether `name` is the name of something of one of task `task_id`'s runs: the task id
/// itself (runs before names were per run) or the task id, a dash and a run's own suffix. Task
/// ids have one length and no dash, so no other task's names match.
pub(crate) fn of_task(task_id: &str, name: &str) -> bool {
    !task_id.is_empty()
        && name
            .strip_prefix(task_id)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

/// Which stream a line of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl OutputStream {
    /// The stream's name.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// How a run ended, as the executor saw it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunOutcome {
    /// The work succeeded.
    pub success: bool,
    /// Process exit details, when there was a process.
    pub exit: Option<ExitInfo>,
    /// Why it failed.
    pub error: Option<String>,
    /// The agent's final answer, for executors whose output is not a stdout stream.
    pub output: Option<String>,
    /// The changes the run made, as a unified diff.
    pub diff: Option<String>,
    /// The kernel killed one of the run's processes at the run's memory limit (in words),
    /// also when the program itself lived on (an agent whose tool's child was killed).
    pub limit_reached: Option<String>,
}

/// Something a run reports while it works.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// One line of raw output (newline stripped; lossy UTF-8), or the last piece of a line
    /// that came in [`RunEvent::OutputPart`]s.
    Output {
        /// Which stream.
        stream: OutputStream,
        /// The line.
        line: String,
    },
    /// A piece of a line too long to pass whole; the line goes on in the stream's next
    /// `OutputPart` or `Output`, which ends it.
    OutputPart {
        /// Which stream.
        stream: OutputStream,
        /// The piece.
        text: String,
    },
    /// Structured progress (tool use, text, diffs, errors).
    Event(NewEvent),
    /// The executor waits for an answer (see [`RunControl::answer`]).
    InputRequested(InputRequest),
    /// A request was answered or withdrawn (by the executor itself, or after an answer).
    InputSettled {
        /// The request's id.
        id: String,
    },
    /// The run ended; nothing follows.
    Finished(RunOutcome),
}

/// Steers a run that is in progress. Every method is safe to call after the run ended.
#[async_trait]
pub trait RunControl: Send + Sync {
    /// Delivers a message to the working agent.
    async fn send_message(&self, message: &str) -> Result<(), RunnerError>;
    /// Freezes the run.
    async fn pause(&self) -> Result<(), RunnerError>;
    /// Unfreezes the run.
    async fn resume(&self) -> Result<(), RunnerError>;
    /// Stops the run: politely, then after `grace` by force. Returns once nothing of it is left
    /// running; the run's event stream then ends with [`RunEvent::Finished`].
    async fn cancel(&self, grace: Duration) -> Result<(), RunnerError>;
    /// Answers a pending [`InputRequest`].
    async fn answer(
        &self,
        _request: &InputRequest,
        _answer: &InputAnswer,
    ) -> Result<(), RunnerError> {
        Err(RunnerError::Unsupported {
            executor: "this".to_owned(),
            action: "answering requests",
        })
    }

    /// How a process outside the server (the run fence's keeper) freezes this run: its
    /// process group and/or cgroup. `None` when the run has neither of its own (a session of
    /// a shared server, a container) or has ended.
    fn fence_target(&self) -> Option<FenceTarget> {
        None
    }
}

/// A started run.
pub struct Run {
    /// Progress, ending with [`RunEvent::Finished`].
    pub events: mpsc::Receiver<RunEvent>,
    /// Steering handle.
    pub control: Box<dyn RunControl>,
    /// What to persist so a restarted server can re-attach to (or clean up) this run.
    pub state: Option<Value>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// Something that can do a task's work.
#[async_trait]
pub trait Executor: Send + Sync + 'static {
    /// The name `execute_task {executor}` selects it by.
    fn name(&self) -> &str;

    /// What it supports.
    fn capabilities(&self) -> Capabilities;

    /// Why it cannot run tasks on this host at all (e.g. its isolation level is unavailable);
    /// submissions to it are refused with this reason, never run weaker.
    fn unavailable(&self) -> Option<String> {
        None
    }

    /// Starts one task.
    async fn start(&self, spec: RunSpec) -> Result<Run, RunnerError>;

    /// An agent already started in a directory of its own, for a task that has no directory
    /// yet: the task takes [`Claim::workdir`] as its directory and starts with
    /// [`Executor::start_claimed`]. `None` without a pool or when no agent waits. A claim
    /// dropped unused stops its agent.
    async fn claim(&self) -> Option<Claim> {
        None
    }

    /// Starts one task on a claimed agent (`spec.workdir` is the claim's directory).
    async fn start_claimed(&self, spec: RunSpec, claim: Claim) -> Result<Run, RunnerError> {
        drop(claim);
        self.start(spec).await
    }

    /// How many started agents wait, of how many its pool keeps; `None` without a pool.
    fn pool(&self) -> Option<(usize, usize)> {
        None
    }

    /// After a restart: re-attaches to a run recorded with `state`, or returns `None` when it
    /// cannot (the engine then fails or re-queues the task). The run's resources are the ones
    /// `state` names: `spec.attempt` is the claim taken now, not the one the run started under.
    async fn reattach(&self, _spec: RunSpec, _state: &Value) -> Result<Option<Run>, RunnerError> {
        Ok(None)
    }

    /// After a restart: stops whatever is left of a run recorded with `state` that will not be
    /// re-attached, so a task never executes twice.
    async fn abandon(&self, state: &Value) -> Result<(), RunnerError>;

    /// Continues a run that ended (started with `continuable`), in the same session and
    /// context, with `prompt` as the next turn; `state` is what the run recorded.
    async fn resume(
        &self,
        _spec: RunSpec,
        _state: &Value,
        _prompt: &str,
    ) -> Result<Run, RunnerError> {
        Err(RunnerError::Unsupported {
            executor: self.name().to_owned(),
            action: "resume",
        })
    }

    /// Frees what a `continuable` run kept for a later [`Executor::resume`] (a session).
    async fn release(&self, _state: &Value) -> Result<(), RunnerError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_named_per_claim_and_known_as_their_tasks() {
        let task = TaskId::generate().unwrap();
        let spec = |attempt| RunSpec {
            task_id: task.clone(),
            attempt,
            prompt: String::new(),
            workdir: PathBuf::new(),
            preset_rules: None,
            continuable: false,
            env: Vec::new(),
            env_hidden: Vec::new(),
        };
        let (first, second) = (spec(1).run_name(), spec(3).run_name());
        assert_eq!(first, format!("{task}-r1"));
        assert_ne!(first, second);
        for name in [&first, &second, &format!("{task}-vabc"), &task.to_string()] {
            assert!(of_task(task.as_str(), name), "{name}");
        }
        let other = TaskId::generate().unwrap();
        for name in [other.to_string(), format!("{other}-r1"), format!("{task}x")] {
            assert!(!of_task(task.as_str(), &name), "{name}");
        }
        assert!(!of_task("", "-r1"));
    }
}
