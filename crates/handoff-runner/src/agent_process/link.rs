//! What a run's driver (reading the agent) and its control handle (steering it) share: the
//! process, the conversation's state as Handoff tracks it, whether the run is being
//! cancelled, and a count of ended turns a cancel can wait on.

use std::sync::{
    Mutex, MutexGuard, PoisonError,
    atomic::{AtomicBool, Ordering},
};

use tokio::sync::watch;

use crate::{RunnerError, command::CommandControl};

/// The conversation with the agent as Handoff tracks it (a session, a thread): what to write
/// for a message, and when nothing is left to do.
pub(crate) trait Conversation: Default + Send + 'static {
    /// A message from the task: the line to write now, or nothing when it waits (for the
    /// session, or for the running turn); refused once the conversation is closed.
    fn message(&mut self, text: &str) -> Result<Option<String>, RunnerError>;

    /// Whether nothing is left to do: no turn runs and no message is on its way.
    fn idle(&self) -> bool;

    /// Set once the conversation takes no more messages.
    fn closed(&mut self) -> &mut bool;

    /// Whether the agent may be let go now: it is idle. Once it says yes, it stays closed and
    /// messages are refused.
    fn try_close(&mut self) -> bool {
        let idle = self.idle();
        let closed = self.closed();
        if !*closed && idle {
            *closed = true;
        }
        *closed
    }

    /// Refuses any further message (cancel, or a fatal error).
    fn close(&mut self) {
        *self.closed() = true;
    }
}

/// The shared half of one agent run.
pub(crate) struct Link<C> {
    pub process: CommandControl,
    conversation: Mutex<C>,
    cancelled: AtomicBool,
    /// Counts ended turns, so a cancel can wait for its stop request to land.
    turns_ended: watch::Sender<u64>,
    /// The agent in debug logs ("Codex", "the ACP agent").
    who: &'static str,
}

impl<C: Conversation> Link<C> {
    /// A fresh conversation with the agent `who` runs in `process`.
    pub fn new(process: CommandControl, who: &'static str) -> Self {
        Self {
            process,
            conversation: Mutex::new(C::default()),
            cancelled: AtomicBool::new(false),
            turns_ended: watch::Sender::new(0),
            who,
        }
    }

    /// The conversation's state (never held across an await).
    pub fn session(&self) -> MutexGuard<'_, C> {
        self.conversation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the run as being cancelled; no message is taken after this.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        self.session().close();
    }

    /// Whether the run is being cancelled.
    pub fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Watches the count of ended turns.
    pub fn turn_ends(&self) -> watch::Receiver<u64> {
        self.turns_ended.subscribe()
    }

    /// Counts an ended turn; `true` when the run is being cancelled, its input then closed so
    /// the agent exits (nothing more is sent).
    pub async fn turn_over(&self) -> bool {
        self.turns_ended.send_modify(|n| *n += 1);
        if self.cancelled() {
            self.process.close_input().await;
            return true;
        }
        false
    }

    /// Once nothing is left to do, EOF lets the agent exit on its own.
    pub async fn close_if_done(&self) {
        let done = self.session().try_close();
        if done {
            self.process.close_input().await;
        }
    }

    /// The run cannot go on: no message is taken, and EOF lets the agent exit.
    pub async fn give_up(&self) {
        self.session().close();
        self.process.close_input().await;
    }

    /// Writes `line`; an agent that no longer reads is only logged (its end is reported
    /// through its events).
    pub async fn write(&self, line: &str) {
        if let Err(e) = self.process.write_line(line).await {
            tracing::debug!(error = %e, "{} did not take a line", self.who);
        }
    }
}
