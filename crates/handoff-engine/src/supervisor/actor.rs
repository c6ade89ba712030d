//! The supervisor actor: one task per run, one mailbox, state no one else can reach. Every
//! command, every report of the driver and every ask timer is handled here one at a time, so
//! races (cancel vs finish, answer vs timeout, pause vs exit) resolve in mailbox order.

use std::{sync::Arc, time::Duration};

use handoff_protocol::TaskCommand;
use handoff_runner::{Capabilities, InputRequest, RunControl, RunnerError};
use handoff_task::{PendingInput, Task, TaskStatus, unix_millis_now};
use tokio::{
    sync::{mpsc, oneshot, watch},
    time::Instant,
};

use super::{
    commands::CommandReply,
    guard::RunGuard,
    live::RunState,
    relay::{Answerer, input_answer},
};
use crate::{
    EngineError, finish::StopReason, lease_clock::LeaseNotice, plan::RunPlan, shared::Shared,
};
use handoff_policy::loop_guard::Step;

/// How long a steering command waits for a just-claimed run's executor to start.
const START_WAIT: Duration = Duration::from_secs(5);

/// A reply to whoever sent a message.
pub(super) type Reply<T> = oneshot::Sender<Result<T, EngineError>>;

/// What a supervisor's mailbox carries.
pub(crate) enum Msg {
    /// From outside, through the command seam.
    Command(TaskCommand, Reply<CommandReply>),
    /// The executor is up.
    Attach {
        control: Arc<dyn RunControl>,
        capabilities: Capabilities,
    },
    /// Handoff decided to stop the run.
    Stop(StopReason),
    /// The server must stop now (a second shutdown signal): the run is killed without grace.
    StopNow,
    /// The executor asks.
    Requested {
        request: InputRequest,
        reply: Reply<()>,
    },
    /// The executor settled a request itself.
    Settled { id: String, reply: Reply<()> },
    /// The executor reported a tool call: the loop guard's step for it, if newly seen.
    ToolCall {
        data: serde_json::Value,
        reply: oneshot::Sender<Option<(String, Step)>>,
    },
    /// A Stop hook refused the end: may the task still be continued under `cap` blocks?
    StopBlock {
        cap: u32,
        reply: oneshot::Sender<bool>,
    },
    /// The run ended normally and is being evaluated.
    Evaluating,
    /// The evaluator takes the kept messages (and, with `conclude`, ends the evaluation when
    /// there are none).
    Messages {
        conclude: bool,
        reply: oneshot::Sender<Vec<String>>,
    },
    /// What became of the run's lease (a shared store only).
    Lease(LeaseNotice),
    /// The run is over.
    Ended,
}

/// Where the run stands, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Starting or running: messages go to the executor.
    Live,
    /// Ended normally, being evaluated: messages are kept for the evaluator.
    Evaluating,
    /// The outcome is being written: messages are refused.
    Concluded,
}

/// A request waiting for an answer, with its ask timer.
pub(super) struct Pending {
    pub(super) request: InputRequest,
    pub(super) expires: Instant,
}

/// What a steering command needs from the executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Steer {
    Pause,
    Resume,
    Message,
}

impl Steer {
    fn name(self) -> &'static str {
        match self {
            Steer::Pause => "pause",
            Steer::Resume => "resume",
            Steer::Message => "messages",
        }
    }

    fn supported_by(self, caps: Capabilities) -> bool {
        match self {
            Steer::Pause | Steer::Resume => caps.pause,
            Steer::Message => caps.messages,
        }
    }
}

/// One run's supervisor.
pub(crate) struct Supervisor {
    pub(super) state: Arc<Shared>,
    pub(super) task: Task,
    plan: Arc<RunPlan>,
    pub(super) control: Option<Arc<dyn RunControl>>,
    capabilities: Capabilities,
    pub(super) stop: Option<StopReason>,
    pub(super) pending: Vec<Pending>,
    /// Commands that need the executor, received while it was still starting.
    deferred: Vec<(TaskCommand, Reply<CommandReply>)>,
    defer_until: Option<Instant>,
    phase: Phase,
    /// Messages received while the run was being evaluated, oldest first.
    kept: Vec<String>,
    /// What the driver reads without asking: published after every change.
    live: watch::Sender<RunState>,
    /// Stops are carried out without grace from now on.
    no_grace: bool,
    /// The run's loop guard.
    pub(super) guard: RunGuard,
    /// Frozen because this instance could not renew its leases in time.
    pub(super) lease_frozen: bool,
    /// The latest lease freeze received ([`LeaseNotice`]).
    pub(super) lease_epoch: u64,
    /// Frozen by a pause command (a lease thaw leaves it frozen).
    pub(super) user_paused: bool,
}

impl Supervisor {
    pub(super) fn new(
        state: Arc<Shared>,
        task: Task,
        plan: Arc<RunPlan>,
        capabilities: Capabilities,
        restored: Vec<PendingInput>,
        live: watch::Sender<RunState>,
    ) -> Self {
        let now = unix_millis_now();
        let pending = restored
            .into_iter()
            .filter_map(|stored| {
                let left = u64::try_from(stored.expires_at - now).unwrap_or(0);
                match serde_json::from_value(stored.request) {
                    Ok(request) => Some(Pending {
                        request,
                        expires: Instant::now() + Duration::from_millis(left),
                    }),
                    Err(e) => {
                        tracing::warn!(task = %task.id, error = %e, "unreadable stored request");
                        None
                    }
                }
            })
            .collect();
        let guard = RunGuard::new(state.config.tools.loop_guard, &task.id);
        let user_paused = task.status == TaskStatus::Paused;
        Self {
            lease_frozen: false,
            lease_epoch: 0,
            user_paused,
            guard,
            state,
            task,
            plan,
            control: None,
            capabilities,
            stop: None,
            pending,
            deferred: Vec::new(),
            defer_until: None,
            phase: Phase::Live,
            kept: Vec::new(),
            live,
            no_grace: false,
        }
    }

    /// Handles the mailbox and the timers until the run ends.
    pub(super) async fn run(mut self, mut mailbox: mpsc::Receiver<Msg>) {
        loop {
            // A request restored after a restart can only be denied to an attached executor:
            // its timer waits for the attach rather than fail and forget the request.
            let expiry = self
                .control
                .as_ref()
                .and(self.pending.iter().map(|p| p.expires).min());
            let defer = self.defer_until;
            tokio::select! {
                msg = mailbox.recv() => match msg {
                    None | Some(Msg::Ended) => break,
                    Some(msg) => self.handle(msg).await,
                },
                () = sleep_until(expiry), if expiry.is_some() => self.expire().await,
                () = sleep_until(defer), if defer.is_some() => self.give_up_deferred(),
            }
            self.publish();
        }
        self.give_up_deferred();
        self.release_run();
    }

    async fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Command(command, reply) => {
                if self.control.is_none()
                    && !matches!(
                        command,
                        TaskCommand::Cancel { .. } | TaskCommand::Exhaust { .. }
                    )
                {
                    self.deferred.push((command, reply));
                    self.defer_until
                        .get_or_insert_with(|| Instant::now() + START_WAIT);
                    return;
                }
                let _ = reply.send(self.command(command).await);
            }
            Msg::Attach {
                control,
                capabilities,
            } => {
                self.guard_run(control.as_ref());
                self.control = Some(control);
                self.capabilities = capabilities;
                self.phase = Phase::Live;
                if let Some(stop) = self.stop.clone() {
                    // Decided while the executor was starting.
                    self.decide_stop(stop);
                }
                self.defer_until = None;
                if self.lease_frozen {
                    // Started while the lease lapsed: frozen before it does anything.
                    self.freeze_for_lease().await;
                }
                for (command, reply) in std::mem::take(&mut self.deferred) {
                    let _ = reply.send(self.command(command).await);
                }
            }
            Msg::Lease(notice) => self.lease(notice).await,
            Msg::Stop(reason) => self.decide_stop(reason),
            Msg::StopNow => {
                self.no_grace = true;
                self.decide_stop(StopReason::Shutdown);
            }
            Msg::Requested { request, reply } => {
                let _ = reply.send(self.requested(request).await);
            }
            Msg::Settled { id, reply } => {
                let _ = reply.send(self.settled(&id).await);
            }
            Msg::ToolCall { data, reply } => {
                let _ = reply.send(self.guard.tool_call(&data));
            }
            Msg::StopBlock { cap, reply } => {
                let more = self.guard.stop_block(cap);
                // Published before the reply: the driver reads it right after.
                self.publish();
                let _ = reply.send(more);
            }
            Msg::Evaluating => self.phase = Phase::Evaluating,
            Msg::Messages { conclude, reply } => {
                let kept = std::mem::take(&mut self.kept);
                if conclude && kept.is_empty() {
                    self.phase = Phase::Concluded;
                }
                let _ = reply.send(kept);
            }
            Msg::Ended => {}
        }
    }

    async fn command(&mut self, command: TaskCommand) -> Result<CommandReply, EngineError> {
        match command {
            TaskCommand::Cancel { reason } => {
                self.decide_stop(StopReason::Cancelled(reason));
                Ok(CommandReply::Stopping)
            }
            TaskCommand::Exhaust { reason } => {
                self.decide_stop(StopReason::Budget(reason));
                Ok(CommandReply::Stopping)
            }
            TaskCommand::Pause => self.freeze(true).await,
            TaskCommand::Resume => self.freeze(false).await,
            TaskCommand::Message { text } => Ok(self.message(&text).await),
            TaskCommand::Answer { answer, by } => self
                .answer(input_answer(answer), Answerer::Agent(by))
                .await
                .map(CommandReply::Answered),
        }
    }

    /// Publishes what the driver reads without asking, when it changed.
    fn publish(&self) {
        let now = RunState {
            stop: self.stop.clone(),
            stop_hook_active: self.guard.stop_hook_active(),
        };
        self.live.send_if_modified(|published| {
            let changed = *published != now;
            if changed {
                *published = now;
            }
            changed
        });
    }

    /// What the attached executor can do.
    pub(super) fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    /// The first stop decided stands; the executor is stopped in the background, and the
    /// driver settles the task with that reason when the run ends.
    pub(super) fn decide_stop(&mut self, reason: StopReason) {
        let grace = match reason {
            // Another instance may run the task already: not a moment beside it.
            _ if self.no_grace || matches!(reason, StopReason::Lost | StopReason::LeaseLapsed) => {
                Duration::ZERO
            }
            // Counted inside the deadline: the kill must land on it.
            StopReason::Timeout => self.plan.deadline.grace,
            _ => self.state.config.tasks.cancel_grace,
        };
        self.stop.get_or_insert(reason);
        // At once: the driver's long waits (verify commands, the judge) end on it.
        self.publish();
        if let Some(control) = &self.control {
            let control = control.clone();
            let executor = self.task.executor.clone();
            let state = self.state.clone();
            tokio::spawn(async move {
                let stopped = control.cancel(grace).await;
                state
                    .metrics
                    .executor_call(&executor, "cancel", stopped.is_ok());
                if let Err(e) = stopped {
                    tracing::warn!(error = %e, "stopping a run failed");
                }
            });
        }
    }

    fn give_up_deferred(&mut self) {
        self.defer_until = None;
        for (command, reply) in std::mem::take(&mut self.deferred) {
            let what = match command {
                TaskCommand::Pause => "pause",
                TaskCommand::Resume => "resume",
                TaskCommand::Message { .. } => "message",
                TaskCommand::Answer { .. } => "answer",
                TaskCommand::Cancel { .. } => "cancel",
                TaskCommand::Exhaust { .. } => "exhaust",
            };
            let _ = reply.send(Err(EngineError::Conflict(format!(
                "task {} has no started executor to {what}",
                self.task.id
            ))));
        }
    }

    /// The executor's control, if it supports `steer`.
    pub(super) fn steering(&self, steer: Steer) -> Result<Arc<dyn RunControl>, EngineError> {
        let control = self.control.clone().ok_or_else(|| {
            EngineError::Conflict(format!(
                "task {} has no started executor to {}",
                self.task.id,
                steer.name()
            ))
        })?;
        if !steer.supported_by(self.capabilities) {
            return Err(RunnerError::Unsupported {
                executor: self.task.executor.clone(),
                action: steer.name(),
            }
            .into());
        }
        Ok(control)
    }

    /// Pauses (`freeze`) or resumes the executor and moves the task accordingly.
    async fn freeze(&mut self, freeze: bool) -> Result<CommandReply, EngineError> {
        let task = self.current().await?;
        let (from, to, steer, verb) = if freeze {
            (
                TaskStatus::Running,
                TaskStatus::Paused,
                Steer::Pause,
                "paused",
            )
        } else {
            (
                TaskStatus::Paused,
                TaskStatus::Running,
                Steer::Resume,
                "resumed",
            )
        };
        if task.status == to {
            return Ok(CommandReply::Steered {
                message: format!("already {}", to.as_str()),
                task: Box::new(task),
                changed: false,
            });
        }
        if task.status != from {
            return Err(EngineError::Conflict(format!(
                "a task that is {} cannot be {verb} (only {} tasks can)",
                task.status,
                from.as_str()
            )));
        }
        if !freeze && self.lease_frozen {
            return Err(EngineError::Unreachable {
                message: format!(
                    "task {} is frozen while this instance renews its lease; retry once it did",
                    self.task.id
                ),
                retry_after: self.state.config.instance.heartbeat,
            });
        }
        let control = self.steering(steer)?;
        let done = if freeze {
            control.pause().await
        } else {
            control.resume().await
        };
        self.state
            .metrics
            .executor_call(&task.executor, steer.name(), done.is_ok());
        done.map_err(|e| finished_or(e, &task))?;
        self.user_paused = freeze;
        let task = self.moved(&task, to, verb).await?;
        Ok(CommandReply::Steered {
            task: Box::new(task),
            changed: true,
            message: if freeze {
                "paused; the executor's processes are frozen".to_owned()
            } else {
                "resumed".to_owned()
            },
        })
    }

    async fn message(&mut self, text: &str) -> CommandReply {
        match self.phase {
            Phase::Live => {}
            Phase::Evaluating => {
                // New input after the turn ended: the task is not done; the evaluator resumes
                // the session with it.
                self.kept.push(text.to_owned());
                return CommandReply::Message {
                    delivered: false,
                    note: "kept: the run ended and is being evaluated; the session resumes with this message".to_owned(),
                };
            }
            Phase::Concluded => {
                return CommandReply::Message {
                    delivered: false,
                    note: "recorded, not delivered: the task's outcome is being written".to_owned(),
                };
            }
        }
        let sent = match self.steering(Steer::Message) {
            Ok(control) => {
                let sent = control.send_message(text).await;
                self.state
                    .metrics
                    .executor_call(&self.task.executor, "message", sent.is_ok());
                sent.map_err(EngineError::from)
            }
            Err(e) => Err(e),
        };
        match sent {
            Ok(()) => {
                // A new instruction from the caller: the loop guard starts over.
                self.guard.reset();
                CommandReply::Message {
                    delivered: true,
                    note: "delivered to the running executor".to_owned(),
                }
            }
            Err(e) => CommandReply::Message {
                delivered: false,
                note: format!("recorded, not delivered: {e}"),
            },
        }
    }

    /// The task as stored now.
    pub(super) async fn current(&self) -> Result<Task, EngineError> {
        self.state
            .store
            .get_task(&self.task.id)
            .await?
            .ok_or_else(|| EngineError::NotFound(self.task.id.to_string()))
    }

    async fn moved(&self, task: &Task, to: TaskStatus, reason: &str) -> Result<Task, EngineError> {
        match self
            .state
            .change_status(task, to, reason, None, None)
            .await?
        {
            Some(task) => Ok(task),
            None => Err(EngineError::Conflict(format!(
                "task changed to {} meanwhile",
                self.current().await?.status
            ))),
        }
    }
}

/// Sleeps until `at`; the caller only polls it when `at` is set.
async fn sleep_until(at: Option<Instant>) {
    tokio::time::sleep_until(at.unwrap_or_else(Instant::now)).await;
}

/// A run that ended between the status read and the signal is a conflict, not a failure.
fn finished_or(error: RunnerError, task: &Task) -> EngineError {
    match error {
        RunnerError::Finished => {
            EngineError::Conflict(format!("task {} finished meanwhile", task.id))
        }
        other => other.into(),
    }
}
