//! The run fence: the server's side of its keeper, a process outside the server that freezes
//! every run it guards once the deadline the server last gave it has passed (see
//! [`handoff_isolation::keeper`]). A server whose lease on its tasks is running out — stopped,
//! hung, or cut off from the shared database — cannot stop its own runs; the keeper does,
//! so a task another instance takes over never runs twice at once.
//!
//! Nothing here is durable. The guarded runs and the deadline live in the keeper's memory,
//! and a copy of which runs are guarded and frozen in this handle's; both end with the server
//! (the keeper dies with it). Orders are one JSON line each on the keeper's stdin, written by
//! a thread of their own, so no call here waits on the keeper.

use std::{
    collections::HashSet,
    io::{BufRead, BufReader, Write},
    os::unix::process::CommandExt,
    process::{Child, ChildStdin, Command, Stdio},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
        mpsc::{Receiver, SyncSender, TrySendError, sync_channel},
    },
    time::Duration,
};

pub use handoff_isolation::keeper::{FenceDeadline, FenceTarget};
use handoff_isolation::keeper::{MAX_GUARDED, Order, Report, check_key};

use crate::RunnerError;

/// Orders not yet written; a keeper that reads none makes further calls fail.
const ORDERS_QUEUED: usize = 4096;
/// How long the keeper may take to start.
const READY_TIMEOUT: Duration = Duration::from_secs(5);
const CONTEXT: &str = "fencing runs";

/// What the handle and its threads share.
#[derive(Default)]
struct Shared {
    /// The keeper is gone (exited, or its stdin broke).
    dead: AtomicBool,
    /// The handle is being dropped: the keeper's end is expected.
    closing: AtomicBool,
    guarded: Mutex<HashSet<String>>,
    frozen: Mutex<HashSet<String>>,
}

impl Shared {
    fn died(&self, why: &str) {
        if !self.dead.swap(true, Ordering::SeqCst) && !self.closing.load(Ordering::SeqCst) {
            tracing::error!(%why, "the run fence's keeper is gone: runs are no longer fenced");
        }
    }
}

/// The server's handle on its keeper process.
pub struct RunFence {
    orders: SyncSender<String>,
    shared: Arc<Shared>,
    pid: u32,
}

impl std::fmt::Debug for RunFence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunFence")
            .field("pid", &self.pid)
            .field("alive", &self.is_alive())
            .finish_non_exhaustive()
    }
}

impl RunFence {
    /// Starts `<launcher…> keeper <this pid>` (the isolation launcher: `handoff isolate`) and
    /// returns once it is ready (at most a few seconds).
    pub fn spawn(launcher: &[String]) -> Result<RunFence, RunnerError> {
        let Some((program, leading)) = launcher.split_first() else {
            return Err(RunnerError::Io {
                context: CONTEXT,
                message: "no launcher to run the keeper with".to_owned(),
            });
        };
        let mut command = Command::new(program);
        command
            .args(leading)
            .arg("keeper")
            .arg(std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .current_dir("/")
            // A stop meant for the server's group (Ctrl-Z) must not reach its keeper.
            .process_group(0);
        let shared = Arc::new(Shared::default());
        let (started_tx, started) = sync_channel(1);
        let parent = Arc::clone(&shared);
        // The parent-death signal fires when the *thread* that forked the keeper ends, not
        // only the process: the keeper is started, and waited for, by a thread that lives
        // exactly as long as it.
        spawn_thread("handoff-keeper", move || {
            parent_thread(command, parent, started_tx)
        })?;
        let (pid, stdin, ready) = started
            .recv()
            .map_err(|_| io_error("the keeper's thread ended before it started"))?
            .map_err(|e| io_error(&format!("starting the keeper {program}: {e}")))?;
        if ready.recv_timeout(READY_TIMEOUT).is_err() {
            shared.closing.store(true, Ordering::SeqCst);
            return Err(io_error(&format!(
                "the keeper ({program} keeper) did not start; see its log lines"
            )));
        }
        let (orders, queued) = sync_channel(ORDERS_QUEUED);
        let writer = Arc::clone(&shared);
        spawn_thread("handoff-keeper-orders", move || {
            write_orders(stdin, &queued, &writer);
        })?;
        Ok(RunFence {
            orders,
            shared,
            pid,
        })
    }

    /// Guards the run `key`: the keeper freezes it by `target` once the deadline passes (at
    /// once when it already has). A known key takes the new target.
    pub fn guard(&self, key: &str, target: &FenceTarget) -> Result<(), RunnerError> {
        check_key(key).map_err(|e| io_error(&e))?;
        target.check().map_err(|e| io_error(&e))?;
        let mut guarded = lock(&self.shared.guarded);
        if !guarded.contains(key) && guarded.len() >= MAX_GUARDED {
            return Err(io_error(&format!("{MAX_GUARDED} runs are guarded already")));
        }
        self.send(&Order::Guard {
            key: key.to_owned(),
            target: target.clone(),
        })?;
        guarded.insert(key.to_owned());
        Ok(())
    }

    /// Forgets the run `key` without thawing it (the server stops or has finished it).
    pub fn release(&self, key: &str) -> Result<(), RunnerError> {
        check_key(key).map_err(|e| io_error(&e))?;
        self.send(&Order::Release {
            key: key.to_owned(),
        })?;
        lock(&self.shared.guarded).remove(key);
        lock(&self.shared.frozen).remove(key);
        Ok(())
    }

    /// Sets the deadline: every guarded run freezes once it passes, unless a later `arm`
    /// comes first. A later deadline thaws nothing by itself (see [`RunFence::thaw`]).
    pub fn arm(&self, until: FenceDeadline) -> Result<(), RunnerError> {
        self.send(&Order::Arm { until })
    }

    /// Thaws the run `key` after the server won its lease back; arm a deadline still ahead
    /// first (the keeper refuses to thaw past the deadline). It thaws whatever froze the run —
    /// not for a run the server paused itself.
    pub fn thaw(&self, key: &str) -> Result<(), RunnerError> {
        check_key(key).map_err(|e| io_error(&e))?;
        self.send(&Order::Thaw {
            key: key.to_owned(),
        })
    }

    /// No deadline: nothing freezes until the next [`RunFence::arm`] (a store no other
    /// instance shares).
    pub fn disarm(&self) -> Result<(), RunnerError> {
        self.send(&Order::Disarm)
    }

    /// Whether the keeper has reported the run `key` frozen (and not thawed since).
    pub fn is_frozen(&self, key: &str) -> bool {
        lock(&self.shared.frozen).contains(key)
    }

    /// The runs the keeper has reported frozen, sorted.
    pub fn frozen(&self) -> Vec<String> {
        let mut keys: Vec<String> = lock(&self.shared.frozen).iter().cloned().collect();
        keys.sort();
        keys
    }

    /// Whether the keeper still runs.
    pub fn is_alive(&self) -> bool {
        !self.shared.dead.load(Ordering::SeqCst)
    }

    /// The keeper's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    fn send(&self, order: &Order) -> Result<(), RunnerError> {
        if !self.is_alive() {
            return Err(io_error("the keeper is gone"));
        }
        let line = order.to_line().map_err(|e| io_error(&e.to_string()))?;
        self.orders.try_send(line).map_err(|e| match e {
            TrySendError::Full(_) => io_error("the keeper is not reading its orders"),
            TrySendError::Disconnected(_) => io_error("the keeper is gone"),
        })
    }
}

impl Drop for RunFence {
    fn drop(&mut self) {
        // Dropping the order queue closes the keeper's stdin; it then exits.
        self.shared.closing.store(true, Ordering::SeqCst);
    }
}

/// What the parent thread hands back once the keeper runs: its pid, stdin, and a signal that
/// it is ready.
type Started = std::io::Result<(u32, ChildStdin, Receiver<()>)>;

/// Starts the keeper, starts its readers, and waits for it to end.
fn parent_thread(mut command: Command, shared: Arc<Shared>, started: SyncSender<Started>) {
    let mut child: Child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let (ready_tx, ready) = sync_channel(1);
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let readers = match pipes {
        (Some(stdin), Some(stdout), Some(stderr)) => {
            let reports = Arc::clone(&shared);
            spawn_thread("handoff-keeper-reports", move || {
                read_reports(stdout, &reports, ready_tx);
            })
            .and_then(|()| spawn_thread("handoff-keeper-log", move || forward_log(stderr)))
            .map(|()| stdin)
            .map_err(|e| std::io::Error::other(e.to_string()))
        }
        _ => Err(std::io::Error::other("the keeper's pipes are missing")),
    };
    match readers {
        Ok(stdin) => {
            let _ = started.send(Ok((child.id(), stdin, ready)));
        }
        Err(e) => {
            let _ = child.kill();
            let _ = started.send(Err(e));
        }
    }
    let status = child.wait();
    let why = match status {
        Ok(status) => format!("it exited: {status}"),
        Err(e) => format!("waiting for it failed: {e}"),
    };
    shared.died(&why);
}

fn write_orders(mut stdin: ChildStdin, queued: &Receiver<String>, shared: &Shared) {
    for line in queued {
        let written = writeln!(stdin, "{line}").and_then(|()| stdin.flush());
        if let Err(e) = written {
            shared.died(&format!("writing to it failed: {e}"));
            return;
        }
    }
}

fn read_reports(stdout: std::process::ChildStdout, shared: &Shared, ready: SyncSender<()>) {
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        match Report::parse(&line) {
            Ok(Report::Ready { .. }) => {
                let _ = ready.try_send(());
            }
            Ok(Report::Frozen { key, .. }) => {
                // A report about a run released meanwhile is stale.
                let guarded = lock(&shared.guarded).contains(&key);
                if guarded {
                    lock(&shared.frozen).insert(key);
                }
            }
            Ok(Report::Thawed { key }) => {
                lock(&shared.frozen).remove(&key);
            }
            Ok(report) => tracing::debug!(%report, "keeper"),
            Err(e) => tracing::warn!(%line, error = %e, "unreadable report from the keeper"),
        }
    }
}

/// The keeper logs only what matters (freezes, thaws, refusals, its own failure).
fn forward_log(stderr: std::process::ChildStderr) {
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        tracing::warn!(target: "handoff::keeper", "{line}");
    }
}

fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), RunnerError> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .stack_size(128 * 1024)
        .spawn(f)
        .map(drop)
        .map_err(|e| io_error(&format!("starting a thread: {e}")))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The sets stay consistent whatever panicked while holding them.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn io_error(message: &str) -> RunnerError {
    RunnerError::Io {
        context: CONTEXT,
        message: message.to_owned(),
    }
}
