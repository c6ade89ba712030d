use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use nix::{
    errno::Errno,
    sys::signal::{Signal, killpg},
    unistd::Pid,
};
use serde::Serialize;
use tokio::{
    io::AsyncWriteExt,
    process::ChildStdin,
    sync::{Mutex, watch},
    time::timeout,
};

use super::{MessageFormat, NAME, confine::Confinement};
use crate::process::GONE_TIMEOUT;
use crate::{RunControl, RunnerError, fence::FenceTarget};

/// A stdin write that takes longer means the process stopped reading and the pipe is full.
const STDIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a run is in its life, as the supervisor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The leader has not exited (or exited but is not reaped, so its pid still names our group).
    Running,
    /// The leader exited and the rest of the group was sent SIGKILL.
    LeaderExited,
    /// Nothing of the group is left running.
    Gone,
}

/// What the supervisor and the control handle share.
pub(super) struct Shared {
    pgid: Pid,
    /// Signals are sent while holding a read borrow of this, and the supervisor moves it out of
    /// `Running` under the write lock before reaping the leader: no signal can reach a group
    /// whose id was recycled.
    phase: watch::Sender<Phase>,
    cancelled: AtomicBool,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    messages: bool,
    format: MessageFormat,
    /// The run's cgroup or container, when it is isolated.
    pub(super) confinement: Confinement,
}

impl Shared {
    pub(super) fn new(
        pgid: i32,
        stdin: Option<ChildStdin>,
        messages: bool,
        format: MessageFormat,
        confinement: Confinement,
    ) -> Self {
        Self {
            pgid: Pid::from_raw(pgid),
            phase: watch::Sender::new(Phase::Running),
            cancelled: AtomicBool::new(false),
            stdin: Arc::new(Mutex::new(stdin)),
            messages,
            format,
            confinement,
        }
    }

    pub(super) fn pgid(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// The run was cancelled before its leader exited.
    pub(super) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Writes the prompt in the background, so a prompt bigger than the pipe cannot block
    /// `start`; the lock is taken now so no message can overtake it.
    pub(super) fn write_prompt(&self, prompt: String, keep_open: bool) {
        let Ok(mut stdin) = Arc::clone(&self.stdin).try_lock_owned() else {
            return;
        };
        tokio::spawn(async move {
            let line = format!("{prompt}\n");
            if let Some(pipe) = stdin.as_mut()
                && let Err(e) = write_all(pipe, line.as_bytes()).await
            {
                tracing::debug!(error = %e, "the process did not take its prompt");
                *stdin = None;
                return;
            }
            if !keep_open {
                *stdin = None;
            }
        });
    }

    /// Called once the leader has exited but before it is reaped.
    pub(super) fn leader_exited(&self) {
        self.phase.send_modify(|phase| {
            if let Err(errno) = killpg(self.pgid, Signal::SIGKILL)
                && errno != Errno::ESRCH
            {
                tracing::warn!(pgid = %self.pgid, %errno, "could not kill the rest of the group");
            }
            *phase = Phase::LeaderExited;
        });
    }

    /// Called once nothing of the group is left running.
    pub(super) async fn gone(&self) {
        self.phase.send_replace(Phase::Gone);
        // Only a process that left the group could still read this; it gets EOF.
        *self.stdin.lock().await = None;
    }

    /// Runs `f` only while the leader's pid still names our group.
    fn while_running<T>(&self, f: impl FnOnce(Pid) -> T) -> Option<T> {
        let phase = self.phase.borrow();
        (*phase == Phase::Running).then(|| f(self.pgid))
    }

    fn signal(&self, signal: Signal) -> Result<(), RunnerError> {
        self.while_running(|pgid| killpg(pgid, signal))
            .ok_or(RunnerError::Finished)?
            .map_err(|errno| RunnerError::Io {
                context: "signalling the process group",
                message: errno.to_string(),
            })
    }

    fn running(&self) -> bool {
        *self.phase.borrow() == Phase::Running
    }
}

/// One message line on the process's stdin; a struct so `type` comes first.
#[derive(Serialize)]
struct MessageLine<'a> {
    r#type: &'static str,
    message: &'a str,
}

/// [`RunControl`] for one `command` run.
pub(crate) struct CommandControl {
    shared: Arc<Shared>,
}

impl CommandControl {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Writes one line of the program's own protocol to its stdin.
    pub(crate) async fn write_line(&self, line: &str) -> Result<(), RunnerError> {
        self.send_message(line).await
    }

    /// Closes the process's stdin (it reads EOF), e.g. once its last turn is done.
    pub(crate) async fn close_input(&self) {
        *self.shared.stdin.lock().await = None;
    }

    /// Whether the process still runs.
    pub(crate) fn is_running(&self) -> bool {
        self.shared.running()
    }

    /// Whether the kernel has killed a process of the run at its memory limit, in words.
    pub(crate) async fn killed_at_limit(&self) -> Option<String> {
        self.shared.confinement.killed_at_limit().await
    }

    /// Kills the process group now (not a cancel: the run ends as the kill leaves it).
    pub(crate) fn kill(&self) -> Result<(), RunnerError> {
        self.shared.signal(Signal::SIGKILL)
    }
}

#[async_trait]
impl RunControl for CommandControl {
    async fn send_message(&self, message: &str) -> Result<(), RunnerError> {
        let shared = &self.shared;
        if !shared.messages {
            return Err(RunnerError::Unsupported {
                executor: NAME.to_owned(),
                action: "messages",
            });
        }
        if !shared.running() {
            return Err(RunnerError::Finished);
        }
        let mut line = match shared.format {
            MessageFormat::JsonLine => serde_json::to_string(&MessageLine {
                r#type: "message",
                message,
            })
            .map_err(|e| RunnerError::Io {
                context: "encoding the message",
                message: e.to_string(),
            })?,
            MessageFormat::Raw => message.to_owned(),
        };
        line.push('\n');

        let stuck = || RunnerError::Io {
            context: "writing a message to the process",
            message: "the process is not reading its stdin".to_owned(),
        };
        let mut stdin = timeout(STDIN_TIMEOUT, shared.stdin.lock())
            .await
            .map_err(|_| stuck())?;
        let Some(pipe) = stdin.as_mut() else {
            return Err(closed_or_finished(shared));
        };
        match timeout(STDIN_TIMEOUT, write_all(pipe, line.as_bytes())).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                *stdin = None;
                Err(closed_or_finished(shared))
            }
            Ok(Err(e)) => Err(RunnerError::Io {
                context: "writing a message to the process",
                message: e.to_string(),
            }),
            Err(_) => Err(stuck()),
        }
    }

    async fn pause(&self) -> Result<(), RunnerError> {
        if !self.shared.running() {
            return Err(RunnerError::Finished);
        }
        // A cgroup freeze stops every process of the run, also those outside its group.
        match self.shared.confinement.pause().await {
            Some(frozen) => frozen,
            None => self.shared.signal(Signal::SIGSTOP),
        }
    }

    async fn resume(&self) -> Result<(), RunnerError> {
        if !self.shared.running() {
            return Err(RunnerError::Finished);
        }
        match self.shared.confinement.resume().await {
            Some(thawed) => thawed,
            None => self.shared.signal(Signal::SIGCONT),
        }
    }

    async fn cancel(&self, grace: Duration) -> Result<(), RunnerError> {
        let shared = &self.shared;
        let mut phase = shared.phase.subscribe();
        let asked = shared.while_running(|pgid| {
            shared.cancelled.store(true, Ordering::SeqCst);
            // TERM first, then CONT: a stopped group wakes with the TERM already pending.
            let _ = killpg(pgid, Signal::SIGTERM);
            let _ = killpg(pgid, Signal::SIGCONT);
        });
        if asked.is_some() {
            // A frozen cgroup would hold the TERM until thawed.
            if let Some(Err(e)) = shared.confinement.resume().await {
                tracing::debug!(error = %e, "thawing before cancel");
            }
            let exited = timeout(grace, phase.wait_for(|p| *p != Phase::Running))
                .await
                .is_ok();
            if !exited {
                // `Finished` here means the leader exited just now; the supervisor kills the rest.
                let _ = shared.signal(Signal::SIGKILL);
                shared.confinement.kill().await;
            }
        }
        // The supervisor waits for the group itself (bounded); the margin covers its reaping.
        let gone = timeout(
            GONE_TIMEOUT + Duration::from_secs(1),
            phase.wait_for(|p| *p == Phase::Gone),
        )
        .await;
        if !matches!(gone, Ok(Ok(_))) {
            tracing::warn!(pgid = %shared.pgid, "cancelled process group did not end in time");
        }
        Ok(())
    }

    fn fence_target(&self) -> Option<FenceTarget> {
        let confinement = &self.shared.confinement;
        // A container's processes live in the engine's cgroup, out of reach of both handles;
        // and once the group is gone its id may name someone else's.
        if confinement.container.is_some() || !self.shared.running() {
            return None;
        }
        Some(FenceTarget {
            pgid: Some(self.shared.pgid()),
            cgroup: confinement.cgroup.as_ref().and_then(|c| c.freezer_dir()),
        })
    }
}

async fn write_all(pipe: &mut ChildStdin, bytes: &[u8]) -> std::io::Result<()> {
    pipe.write_all(bytes).await?;
    pipe.flush().await
}

fn closed_or_finished(shared: &Shared) -> RunnerError {
    if shared.running() {
        RunnerError::Io {
            context: "writing a message to the process",
            message: "the process closed its stdin".to_owned(),
        }
    } else {
        RunnerError::Finished
    }
}
