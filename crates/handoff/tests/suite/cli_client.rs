//! The `handoff` command-line client end to end: the real binary as the client of a real
//! server running the real OpenCode against the scripted model. `run --wait` streams events
//! while the task works and exits 0 on completed, 1 on failed; `message` reaches the model;
//! `approve` and `deny` answer a permission request found by `approvals`; Ctrl-C detaches and
//! `cancel` ends a hanging task; `tasks`, `show`, `logs`, `diff`, `files` and every `--json`
//! print what they should. A second server (the `command` executor) checks tokens, the
//! client config file and the connection errors.

use std::{
    io::{BufRead, BufReader, Read},
    os::unix::fs::PermissionsExt,
    path::PathBuf,
    process::{Child, Command, ExitStatus, Output, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use handoff_scripted_model::ScriptedModel;
use serde_json::Value;

use super::{
    executors::{AGENT, OPENCODE, handoff_env, script, wait_end, wait_hang_reached_model},
    harness::{BIN, Server, require, start},
    wait::{exit_within, wait_until},
};

/// How long a client command may take (a whole OpenCode task for `run --wait`).
const LIMIT: Duration = Duration::from_secs(180);

/// The client's environment: its own HOME and XDG dirs (no client.toml but the test's), the
/// server's URL, and the test agent.
struct Client {
    url: String,
    home: tempfile::TempDir,
    agent: Option<&'static str>,
    token: Option<&'static str>,
}

impl Client {
    fn new(url: &str, agent: Option<&'static str>) -> Self {
        Self {
            url: url.to_owned(),
            home: tempfile::tempdir().unwrap(),
            agent,
            token: None,
        }
    }

    fn config_file(&self) -> PathBuf {
        self.home.path().join("config/handoff/client.toml")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(self.home.path())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("HANDOFF_URL", &self.url)
            .env_remove("HANDOFF_TOKEN")
            .env_remove("HANDOFF_AGENT")
            .env_remove("HANDOFF_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(agent) = self.agent {
            command.env("HANDOFF_AGENT", agent);
        }
        if let Some(token) = self.token {
            command.env("HANDOFF_TOKEN", token);
        }
        command
    }

    /// Runs the client to its end (at most [`LIMIT`]), whatever its exit code.
    fn run(&self, args: &[&str]) -> Output {
        finish(self.command(args).spawn().unwrap(), args)
    }

    /// Runs the client and expects exit code 0; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            shown(&output)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs the client with `--json` and parses its stdout as one JSON document.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let text = self.ok(&all);
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{all:?} printed no JSON ({e}): {text}"))
    }

    /// Starts the client, its stdout read line by line as it comes.
    fn spawn(&self, args: &[&str]) -> Live {
        let mut child = self.command(args).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Live {
            child,
            lines: rx,
            seen: Vec::new(),
            what: format!("{args:?}"),
        }
    }
}

/// A client still running, its stdout lines so far.
struct Live {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    what: String,
}

impl Live {
    /// Waits for a line matching `want` (at most [`LIMIT`]) and returns it.
    fn line(&mut self, want: impl Fn(&str) -> bool) -> String {
        if let Some(line) = self.seen.iter().find(|l| want(l)) {
            return line.clone();
        }
        let deadline = Instant::now() + LIMIT;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if want(&line) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!("{}: no such line in {:#?}", self.what, self.seen);
    }

    /// The task id `run` prints first.
    fn task_id(&mut self) -> String {
        let first = self.line(|l| l.starts_with("task_"));
        first.split_whitespace().next().unwrap().to_owned()
    }

    /// Waits for the client to exit: its status, all of stdout, stderr.
    fn end(mut self) -> (ExitStatus, String, String) {
        let mut stderr = String::new();
        let mut pipe = self.child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let _ = pipe.read_to_string(&mut stderr);
            stderr
        });
        let Some(status) = exit_within(&mut self.child, LIMIT) else {
            let _ = self.child.kill();
            panic!("{} did not end: {:#?}", self.what, self.seen);
        };
        self.seen.extend(self.lines.iter());
        (status, self.seen.join("\n"), reader.join().unwrap())
    }
}

fn finish(mut child: Child, args: &[&str]) -> Output {
    let out = child.stdout.take();
    let mut err = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut out) = out {
            let _ = out.read_to_end(&mut bytes);
        }
        bytes
    });
    let stderr = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        bytes
    });
    let Some(status) = exit_within(&mut child, LIMIT) else {
        let _ = child.kill();
        panic!("{args:?} did not end within {LIMIT:?}");
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn shown(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Polls `handoff approvals --json` until `id` has a pending request; that request.
fn pending_request(client: &Client, id: &str) -> Value {
    wait_until(&format!("{id} to ask"), LIMIT, || {
        let listed = client.json(&["approvals"]);
        listed["pending"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["task_id"] == id)
            .cloned()
            .ok_or(listed)
    })
}

fn workdir(client: &Client, id: &str) -> PathBuf {
    PathBuf::from(client.json(&["show", id])["workdir"].as_str().unwrap())
}

#[test]
fn the_cli_runs_follows_answers_and_reads_tasks_of_the_real_opencode() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(
            script(&OPENCODE),
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    let env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let client = Client::new(&server.url, Some(AGENT));

    // Several tasks at once, each followed by its own `run --wait`.
    let mut named = client.spawn(&["run", "--wait", "WAIT-FOR-NAME then write the file"]);
    let allowed = client.spawn(&["run", "--wait", "ASK-TOUCH allow"]);
    let hanging = client.spawn(&["run", "--wait", "HANG forever"]);
    let submitted = client.json(&["run", "--no-wait", "ASK-TOUCH deny"]);
    assert_eq!(submitted["created"], true, "{submitted}");
    let denied = submitted["task_id"].as_str().unwrap().to_owned();

    // A failing task: exit 1, its error shown.
    let failed = client.run(&["run", "--wait", "BAD-REQUEST now"]);
    assert_eq!(failed.status.code(), Some(1), "{}", shown(&failed));
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert!(
        stdout.contains(" failed after ") && stdout.contains("mock-model rejects this request"),
        "{stdout}"
    );

    let named_id = named_task(&client, &server, &model, &mut named);
    let (status, stdout, stderr) = named.end();
    assert_eq!(status.code(), Some(0), "{stdout}\n{stderr}");
    // Events were streamed, then the outcome, the agent's answer and the diff stat.
    assert!(
        stdout.contains(&format!("{named_id} completed in ")),
        "{stdout}"
    );
    assert!(stdout.contains("\nWrote notes.txt as asked."), "{stdout}");
    assert!(stdout.lines().any(notes_stat), "{stdout}");
    assert!(stdout.contains(" changed, 1 insertion(+)"), "{stdout}");

    approvals(&client, &server, allowed, &denied);
    cancel(&client, &model, hanging);
    reads(&client, &named_id);

    drop(server);
    runtime.block_on(model.shutdown());
}

/// The diff stat's line of the file the named task wrote.
fn notes_stat(line: &str) -> bool {
    line.trim_start().starts_with("notes.txt ") && line.trim_end().ends_with("| 1 +")
}

/// `run --wait` shows the agent's tool call while it still works (the test holds the task
/// until it saw it), and `message` redirects the agent; the task's id.
fn named_task(client: &Client, server: &Server, model: &ScriptedModel, live: &mut Live) -> String {
    let id = live.task_id();
    live.line(|l| l.contains(" tool ") && l.contains("bash"));
    let sent = client.ok(&[
        "message",
        &id,
        "NAME-IS-NOTES",
        "--type",
        "requirement_change",
    ]);
    assert!(
        sent.starts_with(&format!("{id} running (delivered)")),
        "{sent}"
    );
    std::fs::write(workdir(client, &id).join("release"), "").unwrap();
    assert_eq!(wait_end(server, &id)["status"], "completed");
    let heard = model.requests().iter().any(|r| {
        r.user_message
            .as_deref()
            .is_some_and(|m| m.contains("NAME-IS-NOTES"))
    });
    assert!(heard, "the message never reached the model");
    assert!(workdir(client, &id).join("notes.txt").exists());
    id
}

/// `approvals` lists both waiting requests; `approve` (task scope) lets one go on and leaves
/// a standing approval, `deny` refuses the other.
fn approvals(client: &Client, server: &Server, mut live: Live, denied: &str) {
    let allowed = live.task_id();
    let request = pending_request(client, &allowed);
    assert_eq!(request["permission"], "bash", "{request}");
    assert_eq!(request["kind"], "permission", "{request}");
    let pattern = request["patterns"][0].as_str().unwrap();
    assert!(
        pattern.starts_with("touch ") && pattern.ends_with("/approved.txt"),
        "{request}"
    );
    pending_request(client, denied);
    let table = client.ok(&["approvals"]);
    assert!(
        table.contains(&allowed) && table.contains(denied),
        "{table}"
    );
    assert!(table.contains("permission bash"), "{table}");

    let request_id = request["request_id"].as_str().unwrap();
    let approved = client.ok(&[
        "approve",
        &allowed,
        "--request",
        request_id,
        "--scope",
        "task",
    ]);
    assert!(approved.contains("(delivered)"), "{approved}");
    let answered = client.json(&["deny", denied, "--message", "not today"]);
    assert_eq!(answered["delivered"], true, "{answered}");

    let (status, stdout, stderr) = live.end();
    assert_eq!(status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(" input ") && stdout.contains("completed in"),
        "{stdout}"
    );
    assert!(workdir(client, &allowed).join("approved.txt").exists());
    assert_eq!(wait_end(server, denied)["status"], "completed");
    assert!(!workdir(client, denied).join("approved.txt").exists());

    let standing = client.json(&["approvals"]);
    assert_eq!(standing["pending"], serde_json::json!([]), "{standing}");
    let given = standing["approvals"].as_array().unwrap();
    assert!(
        given
            .iter()
            .any(|a| a["scope"] == "task" && a["task_id"] == allowed.as_str()),
        "{standing}"
    );
}

/// Ctrl-C on a `run --wait` that is not on a terminal detaches and says how to follow;
/// `cancel` then ends the hanging task; a message to the ended task shows the tool's error.
fn cancel(client: &Client, model: &ScriptedModel, mut live: Live) {
    let id = live.task_id();
    wait_hang_reached_model(model);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(live.child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let (status, stdout, stderr) = live.end();
    assert_eq!(status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("`handoff logs {id} -f`")),
        "{stderr}"
    );
    assert_eq!(client.json(&["show", &id])["status"], "running");

    let cancelled = client.ok(&["cancel", &id, "--reason", "hung"]);
    assert!(
        cancelled.starts_with(&format!("{id} cancelled")),
        "{cancelled}"
    );
    assert_eq!(client.json(&["show", &id])["status"], "cancelled");
    let logs = client.ok(&["logs", &id]);
    assert!(
        logs.contains(" control ") && logs.contains("hung"),
        "{logs}"
    );

    // An approval for an ended task: the tool's own error text, exit 2 (a plain message
    // would continue it in a follow-up round).
    let refused = client.run(&["approve", &id]);
    assert_eq!(refused.status.code(), Some(2), "{}", shown(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.starts_with("handoff: Error "), "{stderr}");
    assert!(stderr.contains("\nFix: "), "{stderr}");
}

/// `tasks`, `show`, `logs`, `diff` and `files` of a finished task, as lines and as JSON.
fn reads(client: &Client, id: &str) {
    let table = client.ok(&["tasks"]);
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("ID") && header.contains("STATUS"),
        "{table}"
    );
    let row = table.lines().find(|l| l.starts_with(id)).unwrap();
    assert!(
        row.contains("completed") && row.contains("opencode"),
        "{table}"
    );
    let completed = client.json(&["tasks", "--status", "completed"]);
    let listed = completed["tasks"].as_array().unwrap();
    assert!(
        listed.iter().all(|t| t["status"] == "completed"),
        "{completed}"
    );
    assert!(listed.iter().any(|t| t["task_id"] == id), "{completed}");
    assert_eq!(
        client.json(&["tasks", "--status", "cancelled"])["tasks"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let shown = client.ok(&["show", id]);
    assert!(shown.contains("status      completed"), "{shown}");
    assert!(shown.ends_with("Wrote notes.txt as asked.\n"), "{shown}");
    assert_eq!(
        client.json(&["show", id])["answer"],
        "Wrote notes.txt as asked."
    );

    let logs = client.ok(&["logs", id]);
    assert!(
        logs.contains(" tool ") && logs.contains(" message "),
        "{logs}"
    );
    let history = client.json(&["logs", id]);
    let events = history["events"].as_array().unwrap();
    assert_eq!(history["total_events"], events.len(), "{history}");
    assert!(events.iter().any(|e| e["kind"] == "tool"), "{history}");
    // Following an ended task prints what there is and stops.
    let followed = client.ok(&["logs", id, "-f"]);
    assert!(
        followed.contains(&format!("\n{id} completed in ")),
        "{followed}"
    );

    let diff = client.ok(&["diff", id]);
    assert!(diff.contains("+named by a message"), "{diff}");
    let stat = client.ok(&["diff", id, "--stat"]);
    assert!(stat.lines().any(notes_stat), "{stat}");
    let diff = client.json(&["diff", id]);
    let notes = diff["stat"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "notes.txt");
    assert_eq!(notes.unwrap()["added"], 1, "{diff}");
    assert_eq!(diff["diff"]["kind"], "diff", "{diff}");

    let files = client.ok(&["files", id]);
    assert!(
        files.lines().any(|l| l.starts_with("notes.txt  (")),
        "{files}"
    );
    assert_eq!(
        client.ok(&["files", id, "notes.txt"]),
        "named by a message\n"
    );
    let file = client.json(&["files", id, "notes.txt"]);
    assert_eq!(file["content"], "named by a message\n", "{file}");
    let listing = client.json(&["files", id]);
    assert!(
        listing["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == "notes.txt")
    );
}

/// Runs `handoff run TEXT` on a terminal (a pty), presses Ctrl-C once the task printed
/// `started`, answers the prompt with argv[2]; prints the exit code, then everything shown.
const ON_A_TERMINAL: &str = r#"
import os, pty, select, sys, time
binary, answer, text = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execv(binary, [binary, "run", text])
seen = b""
def wait_for(token):
    global seen
    deadline = time.time() + 60
    while token not in seen:
        if time.time() > deadline:
            sys.exit("no %r in %r" % (token, seen))
        if select.select([fd], [], [], 0.2)[0]:
            seen += os.read(fd, 4096)
wait_for(b"output   started")
os.write(fd, b"\x03")
wait_for(b"cancel the task or detach? [c/D]")
os.write(fd, answer.encode() + b"\n")
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
print(seen.decode(errors="replace"))
"#;

/// `handoff run` on a terminal, interrupted: the exit code and what the terminal showed.
fn on_a_terminal(client: &Client, answer: &str) -> (i32, String) {
    let mut python = Command::new(require(".venv/bin/python"));
    python
        .args(["-c", ON_A_TERMINAL, BIN, answer, "echo started; sleep 120"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("TERM", "xterm")
        .env("HOME", client.home.path())
        .env("XDG_CONFIG_HOME", client.home.path().join("config"))
        .env("HANDOFF_URL", &client.url)
        .env("HANDOFF_TOKEN", client.token.unwrap())
        .current_dir(client.home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = finish(python.spawn().unwrap(), &["run on a terminal"]);
    assert!(output.status.success(), "{}", shown(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    let (code, shown) = text.split_once('\n').unwrap();
    (code.trim().parse().unwrap(), shown.to_owned())
}

/// The files the server has spilled cut tool results to.
fn spill_files(server: &Server) -> usize {
    fn count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    if e.path().is_dir() {
                        count(&e.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
    }
    count(&server.dir().join("data").join("tool-output"))
}

/// Tasks are bash scripts: the description is the script.
const SCRIPT_EXECUTOR: [(&str, &str); 3] = [
    ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
    ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
];

#[test]
fn the_cli_names_the_fix_for_tokens_config_files_and_connections() {
    let tokens = r#"[{"token":"agent-t-secret-0123456789","role":"agent","agent_id":"agent-t"}]"#;
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.push(("HANDOFF_AUTH_TOKENS", tokens));
    let server = start(&env);
    let mut client = Client::new(&server.url, None);

    let refused = client.run(&["tasks"]);
    assert_eq!(refused.status.code(), Some(2), "{}", shown(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("401") && stderr.contains("HANDOFF_TOKEN"),
        "{stderr}"
    );

    // The token names the agent; the task's outcome is the exit code, JSON when asked.
    client.token = Some("agent-t-secret-0123456789");
    let done = client.json(&["run", "--wait", "echo from-the-cli"]);
    assert_eq!(done["status"], "completed", "{done}");
    let failed = client.run(&["run", "--wait", "--json", "exit 3"]);
    assert_eq!(failed.status.code(), Some(1), "{}", shown(&failed));
    let failed: Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(failed["status"], "failed", "{failed}");

    // Ctrl-C on a terminal asks: `c` cancels the task (exit 1), Enter detaches (exit 130).
    let (code, screen) = on_a_terminal(&client, "c");
    assert_eq!(code, 1, "{screen}");
    assert!(
        screen.contains("cancelled from `handoff run` (Ctrl-C)"),
        "{screen}"
    );
    let (code, screen) = on_a_terminal(&client, "");
    assert_eq!(code, 130, "{screen}");
    let detached = screen
        .split("detached from ")
        .nth(1)
        .unwrap_or_else(|| panic!("{screen}"));
    let id = &detached[..detached.find(';').unwrap()];
    assert_eq!(client.json(&["show", id])["status"], "running", "{screen}");
    assert!(
        client
            .ok(&["cancel", id])
            .starts_with(&format!("{id} cancelled"))
    );

    // The same token from the client file, which must be private.
    client.token = None;
    let file = client.config_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "token = \"agent-t-secret-0123456789\"\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let open = client.run(&["tasks"]);
    assert_eq!(open.status.code(), Some(2), "{}", shown(&open));
    let stderr = String::from_utf8_lossy(&open.stderr);
    assert!(
        stderr.contains(&format!("chmod 600 {}", file.display())),
        "{stderr}"
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let listed = client.json(&["tasks"]);
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 4, "{listed}");
    let cancelled = client.json(&["tasks", "--status", "cancelled"]);
    assert_eq!(
        cancelled["tasks"].as_array().unwrap().len(),
        2,
        "{cancelled}"
    );

    // An agent the token is not bound to is refused at the edge.
    client.agent = Some("agent-other");
    let other = client.run(&["tasks"]);
    assert_eq!(other.status.code(), Some(2), "{}", shown(&other));
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("not the agent this token belongs to"),
        "{}",
        shown(&other)
    );

    // Nothing listening: the fix is to start the server or point the client elsewhere.
    let nowhere = Client::new("http://127.0.0.1:1/mcp", Some("agent-t"));
    let unreachable = nowhere.run(&["tasks"]);
    assert_eq!(
        unreachable.status.code(),
        Some(2),
        "{}",
        shown(&unreachable)
    );
    let stderr = String::from_utf8_lossy(&unreachable.stderr);
    assert!(
        stderr.contains("is `handoff serve` running there? set --url or HANDOFF_URL"),
        "{stderr}"
    );
    let bad_id = client.run(&["show", "task_nope"]);
    assert_eq!(bad_id.status.code(), Some(2), "{}", shown(&bad_id));
}

/// A task's description, output and file names carry terminal escapes (retitle, clear the
/// screen, colour, a CSI in C1 form); nothing the client prints for `run`, `tasks`, `show`,
/// `logs` and `files` holds one raw: each is shown as an escape. A file's content printed
/// into a pipe keeps its bytes, and `--json` stays the same document.
#[test]
fn nothing_a_task_says_reaches_the_terminal_as_a_control_sequence() {
    let server = start(&SCRIPT_EXECUTOR);
    let client = Client::new(&server.url, Some("agent-tty"));
    let script = "echo '\u{1b}]0;retitled\u{7}\u{1b}[2Jcleared \u{9b}31m'; \
                  printf 'data\\033[31m' > \"$(printf 'name\\033[1m.txt')\"";
    let raw = |output: &Output| {
        output
            .stdout
            .iter()
            .chain(&output.stderr)
            .any(|b| *b == 0x1b || *b == 0x07)
            || String::from_utf8_lossy(&output.stdout).contains('\u{9b}')
    };

    let ran = client.run(&["run", "--wait", script]);
    assert_eq!(ran.status.code(), Some(0), "{}", shown(&ran));
    assert!(!raw(&ran), "{}", shown(&ran));
    let id = String::from_utf8_lossy(&ran.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    for args in [
        vec!["tasks"],
        vec!["show", &id],
        vec!["logs", &id],
        vec!["files", &id],
    ] {
        let output = client.run(&args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            shown(&output)
        );
        assert!(!raw(&output), "{args:?}: {}", shown(&output));
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("\\x1b"),
            "{args:?} shows the escapes: {}",
            shown(&output)
        );
    }

    // Data stays data where no terminal reads it.
    let content = client.run(&["files", &id, "name\u{1b}[1m.txt"]);
    assert_eq!(content.stdout, b"data\x1b[31m", "{}", shown(&content));
    let logs = client.json(&["logs", &id]);
    assert!(
        logs.to_string().contains("\\u001b]0;retitled"),
        "the JSON keeps the output: {logs}"
    );
}

/// What scripts rely on: `run` with stdout in a pipe still waits and exits with the outcome
/// (and says where the task works); a closed pipe ends any command quietly with 0; a burst of
/// submissions past the rate limit all get in, each retried after the wait Handoff names.
#[test]
fn scripts_can_rely_on_exit_codes_closed_pipes_and_rate_limits() {
    let mut env = SCRIPT_EXECUTOR.to_vec();
    // 10 a second after a burst of 5: the 50 below need ~5 s of retries.
    env.extend([
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "600"),
        ("HANDOFF_SUBMISSION_BURST", "5"),
    ]);
    let server = start(&env);
    let client = Client::new(&server.url, Some("agent-script"));

    let failed = client.run(&["run", "exit 3"]);
    assert_eq!(failed.status.code(), Some(1), "{}", shown(&failed));
    let done = client.run(&["run", "echo from-a-script"]);
    assert_eq!(done.status.code(), Some(0), "{}", shown(&done));
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(stdout.contains("completed in"), "{stdout}");
    let workdir = stdout
        .lines()
        .find_map(|l| l.split_once(" works in ").map(|(_, dir)| dir.to_owned()))
        .unwrap_or_else(|| panic!("no directory: {stdout}"));
    assert!(PathBuf::from(&workdir).is_dir(), "{workdir}");

    // Nobody reads stdout: every write fails with EPIPE.
    let id = stdout.split_whitespace().next().unwrap().to_owned();
    for args in [vec!["tasks"], vec!["tasks", "--json"], vec!["logs", &id]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut command = client.command(&args);
        command.stdout(writer);
        let output = finish(command.spawn().unwrap(), &args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            shown(&output)
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }

    let burst: Vec<Child> = (0..50)
        .map(|i| {
            let text = format!("echo burst {i}");
            client
                .command(&["run", "--no-wait", &text])
                .spawn()
                .unwrap()
        })
        .collect();
    for child in burst {
        let output = finish(child, &["run", "--no-wait"]);
        assert_eq!(output.status.code(), Some(0), "{}", shown(&output));
    }
    let listed = client.json(&["tasks", "--limit", "100"]);
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 52, "{listed}");

    // An observer named on the command line reads the task; a malformed one is named and
    // nothing is submitted.
    let args = ["run", "--observer", "agent-watcher", "echo observed"];
    let observed = client.run(&args);
    assert_eq!(observed.status.code(), Some(0), "{}", shown(&observed));
    let id = String::from_utf8_lossy(&observed.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let watcher = Client::new(&server.url, Some("agent-watcher"));
    let seen = watcher.json(&["show", &id]);
    assert_eq!(seen["status"], "completed", "{seen}");
    let refused = client.run(&["run", "--observer", "not an id", "echo never"]);
    assert_eq!(refused.status.code(), Some(2), "{}", shown(&refused));
    assert!(
        shown(&refused).contains("--observer"),
        "{}",
        shown(&refused)
    );
    let listed = client.json(&["tasks", "--limit", "100"]);
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 53, "{listed}");

    // A diff far larger than any view of it is counted whole, the same in every command.
    let big = client.run(&["run", "seq 1 60000 > big.txt"]);
    assert_eq!(big.status.code(), Some(0), "{}", shown(&big));
    let said = String::from_utf8_lossy(&big.stdout);
    assert!(
        said.contains("1 file changed, 60000 insertions(+)"),
        "{said}"
    );
    let id = said.split_whitespace().next().unwrap().to_owned();
    let stat = client.ok(&["diff", &id, "--stat"]);
    assert!(stat.contains(" big.txt | 60000 "), "{stat}");
    let diff = client.json(&["diff", &id]);
    assert_eq!(diff["stat"][0]["added"], 60_000, "{}", diff["stat"]);
    assert_eq!(
        diff["diff"]["truncated"], true,
        "the view is only the diff's beginning"
    );
    // The diff itself is printed whole, read part by part, none of it spilled to disk.
    let spills_before = spill_files(&server);
    let whole = client.ok(&["diff", &id]);
    let added: Vec<&str> = whole.lines().filter(|l| l.starts_with('+')).collect();
    assert_eq!(added.len(), 60_001, "60000 lines and the +++ header");
    assert_eq!(added.last(), Some(&"+60000"));
    assert!(!whole.contains("read_tool_output"));
    assert_eq!(
        spill_files(&server),
        spills_before,
        "paging the diff spilled"
    );
    // One part: where the next starts, on stderr.
    let part = client.run(&["diff", &id, "--offset", "0"]);
    assert_eq!(part.status.code(), Some(0), "{}", shown(&part));
    let stdout = String::from_utf8_lossy(&part.stdout);
    let stderr = String::from_utf8_lossy(&part.stderr);
    let next: u64 = stderr
        .split("--offset ")
        .nth(1)
        .and_then(|n| n.trim().trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no next offset: {stderr}"));
    assert_eq!(next, stdout.len() as u64, "{stderr}");
    assert!(stdout.ends_with('\n') && whole.starts_with(&*stdout));
    let rest = client.ok(&["diff", &id, "--offset", &next.to_string()]);
    assert!(whole[stdout.len()..].starts_with(&rest));

    // Pages: a cursor goes on where a page ended; --all follows them to the end.
    let ids = |page: &Value| -> Vec<String> {
        page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["task_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = client.json(&["tasks", "--limit", "20"]);
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let second = client.json(&["tasks", "--limit", "20", "--cursor", &cursor]);
    let all = client.json(&["tasks", "--limit", "20", "--all"]);
    assert_eq!(all["next_cursor"], Value::Null, "{all}");
    let every = ids(&all);
    assert_eq!(every.len(), 54);
    assert_eq!([ids(&first), ids(&second)].concat(), every[..40]);
}
