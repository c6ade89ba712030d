//! Starts the real binary on a free port in its own temp dir, and finds the interop clients.

use std::{
    collections::VecDeque,
    io::{BufRead, BufReader},
    os::unix::process::ExitStatusExt,
    path::PathBuf,
    process::{Child, Command, Output, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::{Duration, Instant},
};

use super::wait::{PATIENCE, exit_within};

pub const BIN: &str = env!("CARGO_BIN_EXE_handoff");

/// `tests/interop` at the workspace root, where `.ci/run` installs the real clients.
pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

/// A path inside the interop dir that must exist; panics with how to install it otherwise.
pub fn require(relative: &str) -> PathBuf {
    let path = interop_dir().join(relative);
    assert!(
        path.exists(),
        "{} is missing: install the interop clients with `scripts/test.sh` (or `.ci/run`)",
        path.display()
    );
    path
}

pub struct Server {
    pub child: Child,
    pub url: String,
    /// The server's working directory (data dir inside), kept until the server is gone.
    dir: Option<tempfile::TempDir>,
    /// The server's latest log lines, shown when the test fails.
    log: LogTail,
    /// Every line the server logged that [`Server::wait_log`] has not read yet.
    lines: Mutex<mpsc::Receiver<String>>,
}

/// Log lines kept per server for a failing test's output.
const LOG_TAIL: usize = 300;

/// The last [`LOG_TAIL`] lines a server logged.
type LogTail = Arc<Mutex<VecDeque<String>>>;

impl Server {
    /// The working directory the server runs in.
    pub fn dir(&self) -> &std::path::Path {
        self.dir
            .as_ref()
            .map_or(std::path::Path::new("."), |d| d.path())
    }

    /// Waits until the server logs a line containing one of `texts` (read on from where the
    /// last wait stopped); panics with `what` if none comes within [`PATIENCE`].
    pub fn wait_log(&self, what: &str, texts: &[&str]) {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if texts.iter().any(|text| line.contains(text)) => return,
                Ok(_) => {}
                Err(_) => {
                    panic!("waited {PATIENCE:?} for {what}: no log line with any of {texts:?}")
                }
            }
        }
    }

    /// Whether one of the last lines the server logged (start-up included) contains `text`.
    pub fn has_logged(&self, text: &str) -> bool {
        let tail = self.log.lock().unwrap_or_else(|p| p.into_inner());
        tail.iter().any(|line| line.contains(text))
    }

    /// SIGKILLs the server (no cleanup runs) and hands back its directory for a restart.
    pub fn kill9(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.dir.take().unwrap()
    }
}

impl Drop for Server {
    /// SIGTERM first, so Handoff stops what it started (the OpenCode server it manages); SIGKILL
    /// only if it does not exit in time.
    fn drop(&mut self) {
        if std::thread::panicking() {
            let tail = self.log.lock().unwrap_or_else(|p| p.into_inner());
            eprintln!(
                "--- the last {} log lines of handoff at {} ---",
                tail.len(),
                self.url
            );
            for line in tail.iter() {
                eprintln!("[handoff] {line}");
            }
        }
        // Already reaped (kill9): its pid may belong to someone else by now.
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        if exit_within(&mut self.child, Duration::from_secs(20)).is_some() {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `handoff serve --port 0` in a fresh directory and waits for its "listening" line.
pub fn start(env: &[(&str, &str)]) -> Server {
    start_in(tempfile::tempdir().unwrap(), env)
}

/// Starts `handoff serve --port 0` in `dir` (e.g. the directory of a killed server).
pub fn start_in(dir: tempfile::TempDir, env: &[(&str, &str)]) -> Server {
    start_on(dir, "127.0.0.1", env)
}

/// Starts `handoff serve --host HOST --port 0` in `dir`.
pub fn start_on(dir: tempfile::TempDir, host: &str, env: &[(&str, &str)]) -> Server {
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--host", host, "--port", "0"])
        .current_dir(dir.path())
        .env("HANDOFF_DATA_DIR", dir.path().join("data"))
        .env("HANDOFF_LOG_FORMAT", "json")
        // No agent started ahead of tasks where an `opencode` happens to be on PATH; a test
        // about the pool sets it.
        .env("HANDOFF_OPENCODE_POOL", "0")
        .envs(env.iter().copied());
    spawn_server(command, dir, host)
}

/// Spawns `command`, a Handoff server listening on `host` whose log goes to stderr, and waits
/// for its "listening" line; `dir` is kept until the server is gone.
pub fn spawn_server(mut command: Command, dir: tempfile::TempDir, host: &str) -> Server {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let log = LogTail::default();
    let tail = log.clone();
    std::thread::spawn(move || {
        // Keep draining so the server never blocks on a full pipe; HANDOFF_TEST_SERVER_LOG=1
        // shows the server's log in the test output.
        let show = std::env::var_os("HANDOFF_TEST_SERVER_LOG").is_some();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if show {
                eprintln!("[handoff] {line}");
            }
            {
                let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                if tail.len() == LOG_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line.chars().take(2_000).collect());
            }
            let _ = tx.send(line);
        }
    });
    // A safety net: the line is waited for, however long a loaded machine takes to start.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        // Handoff's own line: the OpenCode server it warms up logs a loopback URL too.
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100))
            && line.contains("handoff listening")
            && let Some(at) = line.find(&format!("http://{host}:"))
        {
            let url: String = line[at..]
                .chars()
                .take_while(|c| *c != '"' && !c.is_whitespace())
                .collect();
            return Server {
                child,
                url,
                dir: Some(dir),
                log,
                lines: Mutex::new(rx),
            };
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("handoff did not report its address within 60 s");
}

/// Reads a pipe to its end on a thread, so a chatty child never blocks on a full pipe.
fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// Runs a client command to its exit (a 120 s safety net: a client may wait for a whole agent
/// task on a loaded machine); panics with its output unless it succeeds.
pub fn run_client(command: Command, what: &str) -> Output {
    run_client_for(command, what, Duration::from_secs(120))
}

/// [`run_client`] with another time limit.
pub fn run_client_for(mut command: Command, what: &str, limit: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both pipes are drained while the child runs: waiting for its exit first deadlocks as
    // soon as it writes more than a pipe holds (64 KiB).
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let status = exit_within(&mut child, limit);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let output = Output {
        status: status.unwrap_or_else(|| std::process::ExitStatus::from_raw(9)),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    assert!(
        status.is_some(),
        "{what} did not finish within {limit:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The last line of stdout that parses as JSON.
pub fn json_line(output: &Output) -> serde_json::Value {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no JSON in output: {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
}

/// One sample of `/metrics`: the value of the line that starts with `series` and a space.
pub fn metric(server: &Server, series: &str) -> f64 {
    let url = server.url.replace("/mcp", "/metrics");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = runtime.block_on(async {
        let answer = handoff_letta::testing::http()
            .get(url)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        answer.text().await.unwrap()
    });
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in /metrics:\n{text}"))
}
