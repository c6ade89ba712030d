//! Agents started ahead of tasks. Starting an ACP agent costs seconds (`opencode acp`: ~4.5 s
//! to `initialize`, ~3 s more for its first session), so an executor with a pool keeps a few
//! agents confined, past `initialize` and one warm-up session, each in an empty directory of its
//! own that its sandbox already binds (the warm-up session runs there too when nothing will
//! change the directory before the task's session). A task that has no directory yet takes
//! one: the agent's directory becomes the task's, and the agent opens the task's session in it.
//! A directory cannot be bound into a sandbox that is already running, which is why the task
//! moves into the agent's directory rather than the agent into the task's.
//!
//! Everything here lives in memory: an agent waiting in the pool belongs to no task, and dies
//! with Handoff (its sandbox with its parent, its cgroup swept at the next start); the empty
//! directories a killed Handoff leaves behind are removed by the next pool of the same root.

use std::{
    collections::VecDeque,
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering},
    },
    time::Duration,
};

use handoff_task::TaskId;
use serde_json::Value;
use tokio::sync::mpsc;

use super::protocol;
use crate::agent_home::{self as home, Launcher};
use crate::{
    RunEvent, RunSpec,
    agent_stderr::StderrTail,
    command::CommandControl,
    json_lines::{Said, sort},
};

/// Names of pool directories start with this, then Handoff's pid.
const DIR_PREFIX: &str = "pool-";

/// How long a pooled agent may take to pass `initialize` and its warm-up session.
const START_LIMIT: Duration = Duration::from_secs(180);

/// At most this many of an agent's early events (its start) are kept for the task.
const PREFACE_LIMIT: usize = 64;

/// How many started agents one executor keeps waiting, and where their directories go.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// Agents kept waiting (0: no pool).
    pub size: usize,
    /// The directory task directories are created in (Handoff's workspace).
    pub root: PathBuf,
    /// The warm-up session runs in the agent's own directory: the task's session then opens
    /// in ~0.2 s instead of ~2 s (`opencode acp`, measured). Off when the directory changes
    /// before the task's session (it becomes a git worktree): the agent would keep what it
    /// learned of the empty directory.
    pub warm_in_place: bool,
}

/// An agent waiting for a task: its process, the answer to its `initialize`, and what it said
/// before it was claimed. Dropping it unused stops the agent.
pub struct Claim {
    workdir: PathBuf,
    /// The id the agent was started under (its cgroup, home and model token carry it).
    slot: TaskId,
    parts: Option<Parts>,
}

/// What a claimed agent hands its run.
pub(crate) struct Parts {
    pub init: Value,
    pub events: mpsc::Receiver<RunEvent>,
    pub control: CommandControl,
    pub state: Value,
    pub preface: Vec<RunEvent>,
}

impl Claim {
    /// The directory the agent works in: the task's directory from now on.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The id the agent was started under: a model token made for it names this id, and the
    /// run that claims the agent binds it to its task.
    pub fn slot(&self) -> &TaskId {
        &self.slot
    }

    /// Takes the agent for a run; the claim no longer stops it when dropped.
    pub(crate) fn take(mut self) -> Option<Parts> {
        self.parts.take()
    }

    fn alive(&self) -> bool {
        self.parts.as_ref().is_some_and(|p| p.control.is_running()) && self.workdir.is_dir()
    }
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("workdir", &self.workdir)
            .finish_non_exhaustive()
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(parts) = self.parts.take() {
            if let Err(e) = parts.control.kill() {
                tracing::debug!(error = %e, "stopping an unused pooled agent");
            }
            // Nothing was done in it: the directory and the agent's home go with the agent.
            let _ = std::fs::remove_dir(&self.workdir);
            if let Some(dir) = home::of_state(&parts.state) {
                home::remove(&dir);
            }
        }
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (ready, size) = self.counts();
        f.debug_struct("Pool")
            .field("agent", &self.agent)
            .field("ready", &ready)
            .field("size", &size)
            .finish_non_exhaustive()
    }
}

/// One executor's waiting agents.
pub(crate) struct Pool {
    settings: PoolSettings,
    agent: String,
    launcher: Launcher,
    /// Where the warm-up session runs when not in place: the sandbox's private `/tmp`, else
    /// the host's temp dir.
    scratch: String,
    /// Shared with the executor: first starts of an agent run one at a time.
    warmed: Arc<tokio::sync::Mutex<bool>>,
    ready: Mutex<VecDeque<Claim>>,
    /// What its agents are given to reach the model, set once before the pool first fills.
    env: std::sync::OnceLock<Arc<dyn crate::AgentEnv>>,
    starting: AtomicUsize,
    /// Consecutive failed starts; each one doubles the wait before the next (at most 64 s).
    failures: AtomicU32,
    closed: AtomicBool,
    /// Wakes claims waiting for an agent that is starting, when its start ends.
    arrived: tokio::sync::Notify,
}

impl Pool {
    /// A pool for `agent`, started through `launcher`; empty until [`Pool::fill`].
    pub fn new(
        settings: PoolSettings,
        agent: String,
        launcher: Launcher,
        sandboxed: bool,
        warmed: Arc<tokio::sync::Mutex<bool>>,
    ) -> Self {
        let scratch = if sandboxed {
            "/tmp".to_owned()
        } else {
            std::env::temp_dir().display().to_string()
        };
        Self {
            settings,
            agent,
            launcher,
            scratch,
            warmed,
            ready: Mutex::new(VecDeque::new()),
            env: std::sync::OnceLock::new(),
            starting: AtomicUsize::new(0),
            failures: AtomicU32::new(0),
            closed: AtomicBool::new(false),
            arrived: tokio::sync::Notify::new(),
        }
    }

    /// How many agents wait, and how many the pool keeps.
    pub fn counts(&self) -> (usize, usize) {
        let ready = self.lock().len();
        (ready, self.settings.size)
    }

    /// Agents being started now (a test-only view: a test waits for them to end).
    #[cfg(test)]
    pub fn starting(&self) -> usize {
        self.starting.load(Ordering::SeqCst)
    }

    /// Consecutive failed starts.
    #[cfg(test)]
    pub fn failed_starts(&self) -> u32 {
        self.failures.load(Ordering::SeqCst)
    }

    /// A waiting agent, if one is alive; starts its replacement.
    pub fn claim(self: &Arc<Self>) -> Option<Claim> {
        let claim = loop {
            let next = self.lock().pop_front();
            match next {
                Some(claim) if claim.alive() => break Some(claim),
                Some(dead) => drop(dead),
                None => break None,
            }
        };
        self.fill();
        claim
    }

    /// A waiting agent; while none waits but one is starting (and starts have not been
    /// failing), waits up to `limit` for it.
    pub async fn claim_waiting(self: &Arc<Self>, limit: Duration) -> Option<Claim> {
        let give_up = tokio::time::Instant::now() + limit;
        loop {
            // Registered before looking, so an agent that arrives in between still wakes us.
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(claim) = self.claim() {
                return Some(claim);
            }
            // A pool whose starts fail is not waited for: its next start is backing off.
            if self.starting.load(Ordering::SeqCst) == 0
                || self.closed.load(Ordering::SeqCst)
                || self.failures.load(Ordering::SeqCst) > 0
            {
                return None;
            }
            if tokio::time::timeout_at(give_up, arrived).await.is_err() {
                return None;
            }
        }
    }

    /// Gives the agents started from now on `env` (once; later calls are ignored).
    pub fn set_env(&self, env: Arc<dyn crate::AgentEnv>) {
        let _ = self.env.set(env);
    }

    /// Starts agents until as many wait or start as the pool keeps.
    pub fn fill(self: &Arc<Self>) {
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let ready = self.lock().len();
            let starting = self.starting.load(Ordering::SeqCst);
            if ready + starting >= self.settings.size {
                return;
            }
            if self
                .starting
                .compare_exchange(starting, starting + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                continue;
            }
            let pool = Arc::clone(self);
            tokio::spawn(async move { pool.start_one().await });
        }
    }

    /// Stops every waiting agent; none is started after this.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let waiting: Vec<Claim> = self.lock().drain(..).collect();
        drop(waiting);
        self.arrived.notify_waiters();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Claim>> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn start_one(self: Arc<Self>) {
        let failures = self.failures.load(Ordering::SeqCst);
        if failures > 0 {
            tokio::time::sleep(Duration::from_secs(1 << failures.min(6))).await;
        }
        if self.closed.load(Ordering::SeqCst) {
            self.starting.fetch_sub(1, Ordering::SeqCst);
            self.arrived.notify_waiters();
            return;
        }
        let started = tokio::time::timeout(START_LIMIT, self.start_agent()).await;
        let started = started.unwrap_or_else(|_| Err("it did not start in time".to_owned()));
        match started {
            Ok(claim) if !self.closed.load(Ordering::SeqCst) => {
                self.failures.store(0, Ordering::SeqCst);
                self.lock().push_back(claim);
            }
            Ok(_) => {}
            Err(e) => {
                self.failures.fetch_add(1, Ordering::SeqCst);
                tracing::warn!(agent = %self.agent, error = %e, "a pooled agent did not start");
            }
        }
        // Counted as starting until it waits (or failed), so a claim never sees neither.
        self.starting.fetch_sub(1, Ordering::SeqCst);
        self.arrived.notify_waiters();
        self.fill();
    }

    /// One agent in a new directory, past `initialize` and a warm-up session.
    async fn start_agent(&self) -> Result<Claim, String> {
        let first = Arc::clone(&self.warmed).lock_owned().await;
        let first = (!*first).then_some(first);
        // Its cgroup, home and processes' marker carry an id no task has, new for each agent:
        // the run that claims it has a group no other run (of its task or another) shares.
        let slot = TaskId::generate().map_err(|e| e.to_string())?;
        let workdir = self.settings.root.join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            slot.as_str().trim_start_matches("task_")
        ));
        tokio::fs::create_dir_all(&workdir)
            .await
            .map_err(|e| format!("could not create {}: {e}", workdir.display()))?;
        let (env, env_hidden) = self
            .env
            .get()
            .map(|e| e.for_slot(&slot))
            .unwrap_or_default();
        let spec = RunSpec {
            task_id: slot.clone(),
            attempt: 0,
            prompt: protocol::initialize(),
            workdir: workdir.clone(),
            preset_rules: None,
            continuable: false,
            env,
            env_hidden,
        };
        let spawned = match self.launcher.spawn(&spec, None).await {
            Ok(spawned) => spawned,
            Err(e) => {
                let _ = tokio::fs::remove_dir(&workdir).await;
                return Err(e.to_string());
            }
        };
        let mut claim = Claim {
            workdir,
            slot,
            parts: Some(Parts {
                init: Value::Null,
                events: spawned.events,
                control: spawned.control,
                state: spawned.state,
                preface: Vec::new(),
            }),
        };
        if let Some(parts) = claim.parts.as_mut() {
            let warm_in = if self.settings.warm_in_place {
                claim.workdir.display().to_string()
            } else {
                self.scratch.clone()
            };
            handshake(parts, &self.agent, &warm_in).await?;
        }
        if let Some(mut first) = first {
            *first = true;
        }
        Ok(claim)
    }
}

/// Reads the agent's answers up to `initialize`'s and then the warm-up session's; keeps what
/// else it said for the task.
async fn handshake(parts: &mut Parts, agent: &str, scratch: &str) -> Result<(), String> {
    let mut stderr = StderrTail::new(agent);
    loop {
        match sort(parts.events.recv().await, agent) {
            Said::Json(value) => match value.get("id").and_then(Value::as_str) {
                Some(protocol::INITIALIZE) => {
                    if let Some(error) = value.get("error") {
                        return Err(format!("initialize failed: {error}"));
                    }
                    parts.init = value.get("result").cloned().unwrap_or(Value::Null);
                    let line = protocol::warm_up_session(scratch);
                    parts
                        .control
                        .write_line(&line)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Some(protocol::WARM_UP) => {
                    if let Some(error) = value.get("error") {
                        // Not needed for a task's session; the start is only slower.
                        tracing::debug!(%agent, %error, "the warm-up session failed");
                    }
                    return Ok(());
                }
                _ => {}
            },
            Said::Other(event) => {
                // Its stderr goes to the log, as a task's agent's does.
                if let Some(event) = stderr.take(event)
                    && parts.preface.len() < PREFACE_LIMIT
                {
                    parts.preface.push(event);
                }
            }
            Said::Ended(outcome) => {
                return Err(format!(
                    "it exited before it was ready ({})",
                    outcome.error.as_deref().unwrap_or("no error reported")
                ));
            }
        }
    }
}

/// Removes the empty pool directories under `root` of Handoff processes that are gone.
pub(crate) fn sweep(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !crate::process::pid_alive(pid) {
            // Only an empty one: a task that took it keeps its files there.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_empty_directories_of_gone_processes_are_swept() {
        let root = tempfile::tempdir().unwrap();
        let mine = root.path().join(format!("pool-{}-a", std::process::id()));
        // Above any pid_max: no process has this pid.
        let gone_empty = root.path().join("pool-2147483646-b");
        let gone_used = root.path().join("pool-2147483646-c");
        let other = root.path().join("task_x");
        for dir in [&mine, &gone_empty, &gone_used, &other] {
            std::fs::create_dir(dir).unwrap();
        }
        std::fs::write(gone_used.join("work.txt"), "kept").unwrap();
        sweep(root.path());
        assert!(mine.is_dir());
        assert!(!gone_empty.exists());
        assert!(gone_used.join("work.txt").is_file());
        assert!(other.is_dir());
    }
}
