//! The OpenCode server Handoff talks to: one it starts and supervises (`opencode serve` on a
//! random loopback port behind a fresh password, restarted after a crash), or one it attaches
//! to by URL.

use std::{path::PathBuf, process::Stdio, time::Duration};

use reqwest::Client;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
    sync::{Mutex, watch},
};

use tokio_util::sync::CancellationToken;

use super::client::{Endpoint, OpenCodeClient};
use crate::{RunnerError, process};

/// How long a fresh server may take to answer its health check (3–4 s measured on 2 cores).
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// The line `opencode serve` prints once it listens.
const LISTENING: &str = "opencode server listening on ";

/// How Handoff reaches OpenCode.
#[derive(Debug, Clone)]
pub(crate) enum ServerMode {
    /// Start `opencode serve` with this program, environment and working directory.
    Managed {
        /// The `opencode` program.
        binary: String,
        /// Extra environment (config, isolation of its state).
        env: Vec<(String, String)>,
        /// The inherited environment to start from; `None`: Handoff's own.
        inherit: Option<Vec<(String, String)>>,
        /// Where the server process starts.
        cwd: PathBuf,
        /// Where its pid is kept, so a Handoff that was killed outright can stop the server it
        /// left behind when it starts again.
        state_file: PathBuf,
    },
    /// Use a server someone else runs.
    Attached(Endpoint),
}

/// The variable marking the managed server and every process it starts, so a restarted
/// Handoff finds them even when it died before recording the server's pid.
const SERVER_ID_ENV: &str = "HANDOFF_OPENCODE_SERVER_ID";

/// A running managed server.
struct Running {
    endpoint: Endpoint,
    pgid: i32,
    start_time: Option<u64>,
    /// The value of [`SERVER_ID_ENV`] in its environment.
    marker: String,
    /// Turns false when the process exits.
    alive: watch::Receiver<bool>,
}

/// Hands out a healthy endpoint, starting or restarting the managed server as needed.
pub(crate) struct Server {
    mode: ServerMode,
    http: Client,
    running: Mutex<Option<Running>>,
    /// Cancelled by `stop`: a server still starting is abandoned instead of awaited.
    stopping: CancellationToken,
}

/// Facts about the managed server a restarted Handoff needs to clean it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServerProcess {
    pub pgid: i32,
    pub start_time: Option<u64>,
}

impl Server {
    pub fn new(mode: ServerMode, http: Client) -> Self {
        Self {
            mode,
            http,
            running: Mutex::new(None),
            stopping: CancellationToken::new(),
        }
    }

    /// A healthy endpoint, and the managed process behind it (none when attached).
    pub async fn endpoint(&self) -> Result<(Endpoint, Option<ServerProcess>), RunnerError> {
        let (binary, env, inherit, cwd, state_file) = match &self.mode {
            ServerMode::Attached(endpoint) => return Ok((endpoint.clone(), None)),
            ServerMode::Managed {
                binary,
                env,
                inherit,
                cwd,
                state_file,
            } => (binary, env, inherit.as_deref(), cwd, state_file),
        };
        let mut running = self.running.lock().await;
        if let Some(current) = running.as_ref() {
            if *current.alive.borrow() {
                let process = ServerProcess {
                    pgid: current.pgid,
                    start_time: current.start_time,
                };
                return Ok((current.endpoint.clone(), Some(process)));
            }
            tracing::warn!("the OpenCode server exited; starting a new one");
        }
        stop_leftover(state_file).await;
        let launch = Launch {
            binary,
            env,
            inherit,
            cwd,
            state_file,
        };
        let started = tokio::select! {
            biased;
            () = self.stopping.cancelled() => return Err(RunnerError::Io {
                context: "starting the OpenCode server",
                message: "Handoff is shutting down".to_owned(),
            }),
            started = start(&launch, &self.http) => started?,
        };
        let answer = (
            started.endpoint.clone(),
            Some(ServerProcess {
                pgid: started.pgid,
                start_time: started.start_time,
            }),
        );
        *running = Some(started);
        Ok(answer)
    }

    /// Whether the managed server `process` has exited.
    pub async fn exited(&self, process: ServerProcess) -> bool {
        let running = self.running.lock().await;
        match running.as_ref() {
            Some(current) if current.pgid == process.pgid => !*current.alive.borrow(),
            _ => true,
        }
    }

    /// Waits until the managed server `process` exits; returns at once if it already has.
    pub async fn wait_exit(&self, process: ServerProcess) {
        let mut alive = {
            let running = self.running.lock().await;
            match running.as_ref() {
                Some(current) if current.pgid == process.pgid => current.alive.clone(),
                _ => return,
            }
        };
        // An error means the watcher is gone, i.e. the process was reaped.
        let _ = alive.wait_for(|alive| !alive).await;
    }

    /// Stops the managed server (SIGTERM, then SIGKILL) and waits until it is gone; a server
    /// still starting is killed rather than waited for.
    pub async fn stop(&self) {
        self.stopping.cancel();
        let Some(current) = self.running.lock().await.take() else {
            return;
        };
        if let Some(start_time) = current.start_time
            && let Err(e) = process::abandon_group(current.pgid, start_time).await
        {
            tracing::warn!(error = %e, "stopping the OpenCode server failed");
        }
        // Also what it started outside its group.
        if let Err(e) = kill_marked(&current.marker).await {
            tracing::warn!(error = %e, "stopping the OpenCode server's processes failed");
        }
        // Only now: a Handoff killed halfway through leaves the record for the next start.
        if let ServerMode::Managed { state_file, .. } = &self.mode {
            let _ = tokio::fs::remove_file(state_file).await;
        }
    }

    /// Stops a server an earlier Handoff on this data dir left running (it was killed before
    /// it could); a no-op when attached or once this one started its own.
    pub async fn stop_leftover(&self) {
        if let ServerMode::Managed { state_file, .. } = &self.mode {
            let running = self.running.lock().await;
            if running.is_none() {
                stop_leftover(state_file).await;
            }
        }
    }
}

/// Stops a server recorded by an earlier Handoff that did not get to stop it: its process
/// group, and every process carrying its marker (also when its pid was never recorded).
async fn stop_leftover(state_file: &std::path::Path) {
    let Ok(text) = tokio::fs::read_to_string(state_file).await else {
        return;
    };
    let record: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let pgid = record
        .get("pgid")
        .and_then(serde_json::Value::as_i64)
        .and_then(|p| i32::try_from(p).ok());
    let start_time = record.get("start_time").and_then(serde_json::Value::as_u64);
    if let (Some(pgid), Some(start_time)) = (pgid, start_time) {
        tracing::info!(
            pgid,
            "stopping the OpenCode server a previous Handoff left running"
        );
        if let Err(e) = process::abandon_group(pgid, start_time).await {
            tracing::warn!(error = %e, "could not stop the leftover OpenCode server");
        }
    }
    if let Some(marker) = record.get("marker").and_then(serde_json::Value::as_str) {
        match kill_marked(marker).await {
            Ok(0) => {}
            Ok(killed) => tracing::info!(
                killed,
                "stopped processes of an OpenCode server a previous Handoff left running"
            ),
            Err(e) => tracing::warn!(error = %e, "could not stop the leftover OpenCode server"),
        }
    }
    let _ = tokio::fs::remove_file(state_file).await;
}

/// SIGKILLs every process carrying the server marker `marker`.
async fn kill_marked(marker: &str) -> Result<usize, RunnerError> {
    crate::leftovers::kill_marked(&format!("{SERVER_ID_ENV}={marker}")).await
}

/// How to start the managed server.
struct Launch<'a> {
    binary: &'a str,
    env: &'a [(String, String)],
    inherit: Option<&'a [(String, String)]>,
    cwd: &'a PathBuf,
    state_file: &'a std::path::Path,
}

/// Writes what a restarted Handoff needs to stop the server; `pgid` is unknown before spawn.
async fn record(state_file: &std::path::Path, marker: &str, process: Option<(i32, Option<u64>)>) {
    let record = match process {
        Some((pgid, start_time)) => {
            serde_json::json!({ "marker": marker, "pgid": pgid, "start_time": start_time })
        }
        None => serde_json::json!({ "marker": marker }),
    };
    if let Err(e) = tokio::fs::write(state_file, record.to_string()).await {
        tracing::warn!(error = %e, file = %state_file.display(), "could not record the OpenCode server");
    }
}

async fn start(launch: &Launch<'_>, http: &Client) -> Result<Running, RunnerError> {
    let Launch {
        binary,
        env,
        inherit,
        cwd,
        state_file,
    } = *launch;
    tokio::fs::create_dir_all(cwd)
        .await
        .map_err(|e| RunnerError::Io {
            context: "preparing the OpenCode server's directory",
            message: format!("{}: {e}", cwd.display()),
        })?;
    let password = uuid::Uuid::new_v4().simple().to_string();
    let marker = uuid::Uuid::new_v4().simple().to_string();
    // Recorded before the spawn: a Handoff killed at any point after it leaves a way to the
    // server for the next start.
    record(state_file, &marker, None).await;
    let mut command = Command::new(binary);
    if let Some(vars) = inherit {
        command.env_clear().envs(vars.iter().map(|(k, v)| (k, v)));
    }
    command
        .args(["serve", "--port", "0", "--hostname", "127.0.0.1"])
        .current_dir(cwd)
        .env("PWD", cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("OPENCODE_SERVER_PASSWORD", &password)
        .env(SERVER_ID_ENV, &marker)
        .env_remove("OPENCODE_SERVER_USERNAME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| RunnerError::Spawn {
        program: binary.to_owned(),
        source,
    })?;
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| RunnerError::Io {
            context: "starting the OpenCode server",
            message: "the process has no usable pid".to_owned(),
        })?;
    let start_time = process::start_time(pid);
    // Until it is ready, abandoning the start (shutdown, timeout) kills its whole group.
    let guard = GroupGuard(Some(pid));
    crate::faults::abort_at(crate::faults::AFTER_SERVER_SPAWN);
    record(state_file, &marker, Some((pid, start_time))).await;
    let url = match tokio::time::timeout(READY_TIMEOUT, listening_url(&mut child)).await {
        Ok(Ok(url)) => url,
        Ok(Err(message)) => {
            return Err(RunnerError::Io {
                context: "starting the OpenCode server",
                message,
            });
        }
        Err(_) => {
            return Err(RunnerError::Io {
                context: "starting the OpenCode server",
                message: format!("no `{LISTENING}` line within {READY_TIMEOUT:?}"),
            });
        }
    };
    let endpoint = Endpoint {
        url,
        password: Some(password),
    };
    let probe = OpenCodeClient::new(http.clone(), endpoint.clone(), cwd);
    let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
    while !probe.healthy().await {
        if tokio::time::Instant::now() > deadline {
            return Err(RunnerError::Io {
                context: "starting the OpenCode server",
                message: "it never answered /global/health".to_owned(),
            });
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(RunnerError::Io {
                context: "starting the OpenCode server",
                message: format!("it exited before becoming healthy ({status})"),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::info!(url = %endpoint.url, pid, "OpenCode server ready");
    guard.disarm();
    let (alive_tx, alive) = watch::channel(true);
    tokio::spawn(supervise(child, alive_tx));
    Ok(Running {
        endpoint,
        pgid: pid,
        start_time,
        marker,
        alive,
    })
}

/// Kills a starting server's process group unless the start completed.
struct GroupGuard(Option<i32>);

impl GroupGuard {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Reads stdout until the server says where it listens; stderr goes to the log.
async fn listening_url(child: &mut Child) -> Result<String, String> {
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "opencode", "{line}");
            }
        });
    }
    let Some(stdout) = child.stdout.take() else {
        return Err("no stdout to read the address from".to_owned());
    };
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                if let Some(rest) = line.trim().strip_prefix(LISTENING) {
                    let url = rest.trim().trim_end_matches('/').to_owned();
                    tokio::spawn(async move {
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::debug!(target: "opencode", "{line}");
                        }
                    });
                    return Ok(url);
                }
                tracing::debug!(target: "opencode", "{line}");
            }
            Ok(None) => return Err("it exited before listening".to_owned()),
            Err(e) => return Err(format!("reading its output failed: {e}")),
        }
    }
}

async fn supervise(mut child: Child, alive: watch::Sender<bool>) {
    let status = child.wait().await;
    alive.send_replace(false);
    tracing::warn!(?status, "the OpenCode server exited");
}
