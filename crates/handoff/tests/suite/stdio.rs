//! `handoff serve --stdio` as an MCP client spawns it: a raw line client over its stdin and
//! stdout, and what the process does when the client signals it, closes stdin mid-line or
//! sends lines that are no JSON-RPC.

use std::{
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Child, ChildStdin, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::{Duration, Instant},
};

use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use serde_json::{Value, json};

use super::{
    harness::BIN,
    wait::{PATIENCE, exit_within, wait_until},
};

/// Tasks are bash scripts: the description is the script.
pub const SCRIPT_EXECUTOR: [(&str, &str); 3] = [
    ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
    ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
];

/// A stdio Handoff and the client end of its pipes.
pub struct StdioServer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Every line the server logged (stderr).
    log: Arc<Mutex<Vec<String>>>,
    next_id: u64,
}

impl StdioServer {
    /// Starts `handoff serve --stdio --agent-id <agent>` in `dir` (data dir inside) and
    /// completes the MCP handshake.
    pub fn start(dir: &Path, agent: &str, env: &[(&str, &str)]) -> Self {
        let mut server = Self::spawn(dir, agent, env);
        let init = server.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "handoff-stdio-test", "version": "1"}
            }),
        );
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        server.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    /// Starts the process without a handshake.
    pub fn spawn(dir: &Path, agent: &str, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(BIN)
            .args(["serve", "--stdio", "--agent-id", agent])
            .current_dir(dir)
            .env("HANDOFF_DATA_DIR", dir.join("data"))
            .env("HANDOFF_LOG_FORMAT", "json")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let logged = Arc::clone(&log);
        std::thread::spawn(move || {
            // Drained so the server never blocks on a full pipe; HANDOFF_TEST_SERVER_LOG=1 shows it.
            let show = std::env::var_os("HANDOFF_TEST_SERVER_LOG").is_some();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if show {
                    eprintln!("[handoff stdio] {line}");
                }
                logged
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(line);
            }
        });
        Self {
            child,
            stdin: Some(stdin),
            lines,
            log,
            next_id: 1,
        }
    }

    /// The process id.
    pub fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).unwrap())
    }

    /// Writes raw bytes to the server's stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is closed");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Writes one line.
    pub fn send_line(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    /// Closes the server's stdin (EOF).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next JSON line the server writes, skipping notifications.
    pub fn next_reply(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no reply from the stdio server: {e}"));
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
            if value.get("method").is_none() {
                return value;
            }
        }
    }

    /// Sends a request and returns its response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&line.to_string());
        loop {
            let reply = self.next_reply();
            if reply["id"] == id {
                return reply;
            }
        }
    }

    /// Calls a tool; returns its structured result, panicking on an error.
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &reply["result"];
        assert_ne!(result["isError"], true, "{reply}");
        result["structuredContent"].clone()
    }

    /// Polls `get_task_status` until the task is in one of `want`.
    pub fn wait_status(&mut self, id: &str, want: &[&str], limit: Duration) -> Value {
        wait_until(&format!("{id} to be {want:?}"), limit, || {
            let status = self.call("get_task_status", json!({"task_id": id}));
            if want.contains(&status["status"].as_str().unwrap_or_default()) {
                Ok(status)
            } else {
                Err(status)
            }
        })
    }

    /// Waits for the process to exit; `None` if it is still running after `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        exit_within(&mut self.child, limit)
    }

    /// Waits until the server has logged a line containing `text`.
    pub fn wait_log(&self, text: &str) {
        wait_until(&format!("a log line with `{text}`"), PATIENCE, || {
            self.log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .any(|line| line.contains(text))
        });
    }

    /// SIGKILLs the server (no cleanup runs).
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        self.stdin = None;
        let _ = kill(self.pid(), Signal::SIGTERM);
        if self.wait_exit(Duration::from_secs(20)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Whether process `pid` still runs (a zombie does not).
pub fn process_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Reads the pid a task script wrote to `file` in its directory, waiting for it.
pub fn wait_pid_file(file: &Path) -> i32 {
    wait_until(
        &format!("{} to be written", file.display()),
        PATIENCE,
        || {
            std::fs::read_to_string(file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
        },
    )
}

/// A task that ignores SIGTERM and writes its pid to `pid` in its directory.
const STUBBORN: &str = "trap '' TERM; echo $$ > pid; while :; do sleep 0.05; done";

/// Submits [`STUBBORN`]; returns the task id and its process id once it runs.
fn submit_stubborn(server: &mut StdioServer) -> (String, i32) {
    let submitted = server.call("execute_task", json!({"task_description": STUBBORN}));
    let id = submitted["task_id"].as_str().unwrap().to_owned();
    let running = server.wait_status(&id, &["running"], Duration::from_secs(30));
    let workdir = Path::new(running["workdir"].as_str().unwrap()).to_owned();
    (id, wait_pid_file(&workdir.join("pid")))
}

/// The task's state as the store has it after a graceful stop (read by a fresh instance:
/// start-up recovery would say "server restarted" for a task left running).
fn stored_error(dir: &Path, id: &str) -> Value {
    let mut again = StdioServer::start(dir, "stdio-agent", &SCRIPT_EXECUTOR);
    let status = again.call("get_task_status", json!({"task_id": id}));
    assert_eq!(status["status"], "failed", "{status}");
    status["error"].clone()
}

#[test]
fn sigterm_stops_a_stdio_server_whose_stdin_stays_open_and_records_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.push(("HANDOFF_CANCEL_GRACE_MS", "1000"));
    let mut server = StdioServer::start(dir.path(), "stdio-agent", &env);
    let (id, pid) = submit_stubborn(&mut server);

    kill(server.pid(), Signal::SIGTERM).unwrap();
    // stdin stays open: the client neither closes it nor reads on.
    let exit = server.wait_exit(Duration::from_secs(15));
    assert!(exit.is_some(), "still running 15 s after SIGTERM");
    assert!(exit.unwrap().success(), "{exit:?}");
    assert!(!process_alive(pid), "the task's process {pid} survived");
    drop(server);
    assert_eq!(
        stored_error(dir.path(), &id),
        "interrupted: server shut down"
    );
}

#[test]
fn a_second_signal_kills_the_runs_without_waiting_for_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.push(("HANDOFF_CANCEL_GRACE_MS", "120000"));
    let mut server = StdioServer::start(dir.path(), "stdio-agent", &env);
    let (id, pid) = submit_stubborn(&mut server);

    // What Claude Code does when it closes: SIGINT, SIGTERM, then (soon) SIGKILL.
    kill(server.pid(), Signal::SIGINT).unwrap();
    // The second signal comes once the first one is being handled.
    server.wait_log("SIGINT: shutting down");
    kill(server.pid(), Signal::SIGTERM).unwrap();
    let exit = server.wait_exit(Duration::from_secs(15));
    assert!(exit.is_some(), "still waiting for the 120 s grace");
    assert!(!process_alive(pid), "the task's process {pid} survived");
    drop(server);
    assert_eq!(
        stored_error(dir.path(), &id),
        "interrupted: server shut down"
    );
}

#[test]
fn bad_lines_get_null_id_errors_and_a_last_line_without_newline_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(dir.path(), "stdio-agent", &SCRIPT_EXECUTOR);

    server.send_line("{this is not json");
    let parse = server.next_reply();
    assert_eq!(parse.get("id"), Some(&Value::Null), "{parse}");
    assert_eq!(parse["error"]["code"], -32700, "{parse}");

    server.send_line(r#"{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": []}"#);
    let params = server.next_reply();
    assert_eq!(params["id"], 5, "{params}");
    assert_eq!(params["error"]["code"], -32602, "{params}");

    server.send_line(r#"{"id": {"nested": true}, "method": "ping"}"#);
    let envelope = server.next_reply();
    assert_eq!(envelope.get("id"), Some(&Value::Null), "{envelope}");
    assert_eq!(envelope["error"]["code"], -32600, "{envelope}");

    // The session still works, and a last line without a newline is a message too.
    server.send_raw(br#"{"jsonrpc": "2.0", "id": 9, "method": "ping"}"#);
    server.close_stdin();
    let pong = server.next_reply();
    assert_eq!(pong["id"], 9, "{pong}");
    assert!(pong["result"].is_object(), "{pong}");
    let exit = server.wait_exit(Duration::from_secs(15));
    assert!(exit.is_some_and(|e| e.success()), "{exit:?}");
}

/// The task directory of the only task under `dir`'s data dir; its name is the task id.
fn only_workdir(dir: &Path) -> std::path::PathBuf {
    let workspaces = dir.join("data").join("workspaces");
    wait_until("one task directory", PATIENCE, || {
        let found: Vec<_> = std::fs::read_dir(&workspaces)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        match found.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(format!("{found:?}")),
        }
    })
}

/// Handoff dies between starting a run and recording its pid (the crash placed there by
/// `HANDOFF_TEST_ABORT_AT`): the next start still finds the run's processes — also one that
/// left its process group — and kills them before the re-queued task runs again in the same
/// directory.
#[test]
fn a_run_whose_pid_was_never_recorded_is_stopped_before_the_task_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    // Without isolation nothing dies with Handoff (the `process` level's launcher would not
    // start a run whose Handoff is gone), and no cgroup helps to find the run: only what it
    // carries does.
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.push(("HANDOFF_ISOLATION", "none"));
    let mut crashing = env.clone();
    crashing.push(("HANDOFF_TEST_ABORT_AT", "after_spawn_before_record"));
    let mut server = StdioServer::start(dir.path(), "stdio-agent", &crashing);
    // First run: a child that leaves the group and lives on. Re-run: says whether it is still
    // there beside it.
    let script = "if [ -f child ]; then \
                    s=$(cut -d' ' -f3 /proc/$(cat child)/stat 2>/dev/null); \
                    if [ -n \"$s\" ] && [ \"$s\" != Z ]; then echo beside; else echo alone; fi > verdict; \
                    exit 0; \
                  fi; \
                  setsid sleep 300 & echo $! > child; wait";
    let request = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
        "name": "execute_task",
        "arguments": {"task_description": script, "requeue_on_restart": true}
    }});
    server.send_line(&request.to_string());
    let exit = server.wait_exit(Duration::from_secs(30));
    let signal = exit.and_then(|e| std::os::unix::process::ExitStatusExt::signal(&e));
    assert_eq!(
        signal,
        Some(6),
        "Handoff did not crash at the injection point: {exit:?}"
    );
    drop(server);
    let workdir = only_workdir(dir.path());
    let id = workdir.file_name().unwrap().to_str().unwrap().to_owned();
    let survivor = wait_pid_file(&workdir.join("child"));
    assert!(
        process_alive(survivor),
        "nothing survived the crash to test with"
    );

    let mut server = StdioServer::start(dir.path(), "stdio-agent", &env);
    let done = server.wait_status(&id, &["completed", "failed"], Duration::from_secs(60));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        std::fs::read_to_string(workdir.join("verdict")).unwrap(),
        "alone\n",
        "the re-run ran beside the old run"
    );
    assert!(
        !process_alive(survivor),
        "the old run's process {survivor} survived"
    );
}
