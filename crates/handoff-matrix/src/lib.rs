//! Handoff's Matrix integration. A task with Matrix observers (`execute_task {observers:
//! ["@name:server"]}`), or every task under `matrix.room_per_task`, gets a private room of its
//! own (room version 12) created by the bot: observers are invited read-only, controllers may
//! talk. The room hears the task's status changes at once, its other events coalesced into at
//! most one message per interval, each pending permission request with the command that
//! answers it, and the outcome with the diff stat and the agent's answer. Messages from the
//! room are read by one `/sync` loop whose position is stored; a command (`!cancel`, `!pause`,
//! `!resume`, `!approve`, `!deny`) or a message for the agent is applied only for a sender on
//! the `matrix.controllers` allow-list or an owner of the task's agent (`matrix.owners`, who
//! is also invited), once (applied commands are stored), through the [`Steering`] the
//! composition root supplies (the tool pipeline). Everyone else is told no.
//! The room is left and forgotten on a stored schedule after the task ends. Matrix being down
//! never fails or delays a task: posting runs beside it and retries with back-off.
//!
//! The client is a thin typed reqwest client over the few routes needed ([`MatrixClient`]),
//! not `matrix-sdk`: no end-to-end encryption is needed, and the SDK would bring its own state
//! stores and several times the build.

mod client;
pub mod command;
pub mod create;
mod error;
pub mod html;
mod identity;
mod meter;
pub mod pace;
pub mod render;
mod room;
mod source;
mod sync;

use std::{
    sync::{Arc, OnceLock},
    time::Duration,
};

use handoff_config::MatrixConfig;
use handoff_integration::{TaskSource, Workers, step_note};
use handoff_store::ChannelStore;
use handoff_task::{Task, TaskId, unix_millis_now};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use client::{MatrixClient, ROOM_VERSION, RoomEvent, RoomSpec, SyncResponse};
pub use command::{Command, Scope};
pub use error::MatrixError;
pub use identity::acting_name;
pub use meter::{MatrixMeter, NoMeter, RoomOrigin};
pub use source::{Steering, TaskView};

/// State changes of tasks without a poster queued for the sweeper before it catches up at
/// its next pass instead.
const MOVES_QUEUED: usize = 1024;

/// The integration's name in the store.
pub const INTEGRATION: &str = "matrix";

/// Tasks whose posted round is remembered at most; past it the memory starts over (a
/// state change of a finished task's round then posts its outcome once more, at worst).
const MAX_OUTCOMES: usize = 10_000;

/// State shared by the room posters, the sync loop and the sweeper.
pub(crate) struct Shared {
    pub config: MatrixConfig,
    pub client: MatrixClient,
    pub store: Arc<dyn ChannelStore>,
    pub source: Arc<dyn TaskSource>,
    /// Where the integration's counts go.
    pub meter: Arc<dyn MatrixMeter>,
    /// The bot's user id, once known.
    pub me: OnceLock<String>,
    /// Distinguishes this process's transaction ids from an earlier one's.
    pub run_id: i64,
    /// Messages this process's posters sent: each gets a transaction id of its own, also when
    /// one task's room is posted to by several posters in turn (a follow-up round's poster
    /// after the last round's), since the homeserver answers a reused id with the old message.
    sent: std::sync::atomic::AtomicU64,
    /// Tasks without a poster here whose state changed: the sweeper looks at once whether
    /// their room moved to this instance (a takeover), instead of at its next pass.
    moved: mpsc::Sender<TaskId>,
    /// Cancelled when the integration stops.
    pub stop: CancellationToken,
    /// The room posters, by task, the sweeper and the sync loop.
    workers: Workers,
    /// The round whose outcome each task's room last got from this process: a poster run again
    /// for a state change of that same round posts no second outcome.
    outcomes: std::sync::Mutex<std::collections::HashMap<TaskId, u32>>,
}

impl Shared {
    /// Whether a poster of this process serves the task's room.
    fn has_poster(&self, id: &TaskId) -> bool {
        self.workers.serves(id)
    }

    /// Wakes the task's poster about a state change, starting it unless one runs (and running
    /// it again when the change came after its last look: a follow-up round that started
    /// while the last outcome was being posted).
    fn ensure_poster(self: &Arc<Self>, id: &TaskId) {
        let (shared, task) = (self.clone(), id.clone());
        self.workers.ensure_marked(id, true, move |slot| {
            let (shared, task) = (shared.clone(), task.clone());
            async move { room::run(&shared, &task, &slot).await }
        });
    }

    /// Records that the outcome of `round` of `task` was posted; whether it had been already.
    fn outcome_posted(&self, task: &TaskId, round: u32) -> bool {
        let mut posted = self
            .outcomes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if posted.len() >= MAX_OUTCOMES && !posted.contains_key(task) {
            posted.clear();
        }
        posted.insert(task.clone(), round) == Some(round)
    }

    /// A transaction id for the next message to `task`'s room, never one used before by this
    /// process.
    fn next_txn(&self, task: &TaskId) -> String {
        let n = self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        format!("handoff-{}-{task}-{n}", self.run_id)
    }

    /// Whether the outcome of `round` of `task` was posted by this process.
    fn has_posted(&self, task: &TaskId, round: u32) -> bool {
        let posted = self
            .outcomes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        posted.get(task) == Some(&round)
    }

    /// Adds a note about Matrix to the task's history, and to the log: an operator reads why a
    /// room is missing there without asking for each task's history.
    pub async fn note(&self, task: &TaskId, step: &str, message: String) {
        if step.ends_with("failed") {
            tracing::warn!(task = %task, step, "matrix: {message}");
        } else {
            tracing::info!(task = %task, step, "matrix: {message}");
        }
        self.source
            .note(task, step_note("matrix", step, message))
            .await;
    }

    /// Sleeps `wait` unless the integration stops first (then `false`).
    pub async fn pause(&self, wait: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(wait) => true,
            () = self.stop.cancelled() => false,
        }
    }
}

/// The Matrix integration of one Handoff process. Cheap to clone.
#[derive(Clone)]
pub struct MatrixBridge {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MatrixBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixBridge")
            .field("homeserver", &self.shared.config.homeserver_url)
            .finish_non_exhaustive()
    }
}

impl MatrixBridge {
    /// Starts the integration: the sweeper that closes rooms when due, and the posters of the
    /// rooms an earlier process left open. Commands are read once [`Self::steer_with`] is
    /// called.
    pub fn start(
        config: MatrixConfig,
        store: Arc<dyn ChannelStore>,
        source: Arc<dyn TaskSource>,
        meter: Arc<dyn MatrixMeter>,
    ) -> Result<Self, MatrixError> {
        let (Some(url), Some(token)) = (&config.homeserver_url, &config.access_token) else {
            return Err(MatrixError::Config(
                "matrix.homeserver_url and matrix.access_token are both needed".to_owned(),
            ));
        };
        let client = MatrixClient::new(url, token.expose(), config.request_timeout)?;
        let (moved, moves) = mpsc::channel(MOVES_QUEUED);
        let stop = CancellationToken::new();
        let shared = Arc::new(Shared {
            config,
            client,
            store,
            source,
            meter,
            me: OnceLock::new(),
            run_id: unix_millis_now(),
            sent: std::sync::atomic::AtomicU64::new(0),
            moved,
            stop: stop.clone(),
            workers: Workers::new(stop),
            outcomes: std::sync::Mutex::default(),
        });
        shared.workers.spawn(room::sweep(shared.clone(), moves));
        Ok(Self { shared })
    }

    /// The client (health checks, tests).
    pub fn client(&self) -> &MatrixClient {
        &self.shared.client
    }

    /// Whether `task` gets a room under `config`: someone is there to read it.
    pub fn wants_room(config: &MatrixConfig, task: &Task) -> bool {
        config.room_per_task
            || !task.options.matrix_observers.is_empty()
            || config.owners_of(&task.agent_id).next().is_some()
    }

    /// A task starts running: its poster creates (or, after a restart, finds) its room.
    pub fn task_started(&self, task: &Task) {
        if Self::wants_room(&self.shared.config, task) {
            self.shared.ensure_poster(&task.id);
        }
    }

    /// Something happened to a task. Cheap: a task without a poster here matters only when
    /// its state changed (another instance's task may have been taken over by this one).
    pub fn touch(&self, id: &TaskId, status_changed: bool) {
        // A full queue only delays the look to the sweeper's next pass.
        if !self.shared.workers.mark(id, status_changed) && status_changed {
            let _ = self.shared.moved.try_send(id.clone());
        }
    }

    /// Starts reading the rooms: commands from them are applied through `steering`.
    pub fn steer_with(&self, steering: Arc<dyn Steering>) {
        let shared = self.shared.clone();
        self.shared
            .workers
            .spawn(async move { sync::run(shared, steering).await });
    }

    /// The room of `task`, once created.
    pub async fn room_of(&self, task: &TaskId) -> Option<String> {
        match self.shared.store.channel(INTEGRATION, task).await {
            // Before the room exists its alias is recorded; that is no room yet.
            Ok(record) => record
                .map(|r| r.channel_id)
                .filter(|id| create::is_room_id(id)),
            Err(e) => {
                tracing::warn!(task = %task, error = %e, "cannot read the task's Matrix room");
                None
            }
        }
    }

    /// How many task rooms are open (created and not yet left), or `None` when the store
    /// cannot say.
    pub async fn open_rooms(&self) -> Option<usize> {
        match self.shared.store.open_channels(INTEGRATION).await {
            Ok(open) => Some(open.len()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot count the open Matrix rooms");
                None
            }
        }
    }

    /// Stops the posters, the sync loop and the sweeper; the stored rooms and sync position
    /// let the next process carry on.
    pub async fn shutdown(&self) {
        self.shared.workers.shutdown("Matrix posters").await;
    }
}
