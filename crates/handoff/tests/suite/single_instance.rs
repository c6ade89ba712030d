//! One Handoff per data dir: while an instance runs a task, a second `handoff serve` (HTTP or
//! stdio) on the same data dir refuses to start, naming the holder's pid, and leaves the
//! running task alone.

use std::{
    io::Read,
    path::Path,
    process::{Child, Command, ExitStatus, Stdio},
    time::Duration,
};

use super::{
    harness::{BIN, start},
    raw_mcp::Raw2026,
    wait::{PATIENCE, exit_within, wait_until},
};

/// Tasks are bash scripts: the description is the script.
const SCRIPT_EXECUTOR: [(&str, &str); 4] = [
    ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
    ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
    ("HANDOFF_TASK_POLL_INTERVAL_MS", "200"),
];

/// How long a refused instance may take to exit; one still running then has not refused.
const REFUSAL: Duration = Duration::from_secs(20);

struct Exited {
    status: ExitStatus,
    stderr: String,
}

/// Runs `command` with stdin held open (a stdio server would otherwise stop on EOF) until it
/// exits; panics if it is still running after [`REFUSAL`].
fn run_until_exit(mut command: Command) -> Exited {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let drained = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = wait_or_kill(&mut child);
    let stderr = drained.join().unwrap();
    let Some(status) = status else {
        panic!("a second instance on a locked data dir kept running; stderr: {stderr}");
    };
    Exited { status, stderr }
}

fn wait_or_kill(child: &mut Child) -> Option<ExitStatus> {
    let status = exit_within(child, REFUSAL);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    status
}

fn wait_for_file(path: &Path) {
    wait_until(&format!("{} to appear", path.display()), PATIENCE, || {
        path.exists()
    });
}

/// A second `handoff serve` with `extra` arguments on `data`, run to its exit.
fn second_instance(data: &Path, extra: &[&str]) -> Exited {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .arg("serve")
        .args(extra)
        .current_dir(dir.path())
        .env("HANDOFF_DATA_DIR", data)
        .envs(SCRIPT_EXECUTOR);
    run_until_exit(command)
}

fn assert_refused(second: &Exited, data: &Path, pid: u32) {
    assert!(!second.status.success(), "{}", second.stderr);
    let text = &second.stderr;
    assert!(text.contains(&format!("pid {pid}")), "{text}");
    assert!(text.contains(&data.display().to_string()), "{text}");
    assert!(text.contains("HANDOFF_DATA_DIR"), "{text}");
}

#[test]
fn a_second_instance_on_the_same_data_dir_refuses_and_leaves_the_first_alone() {
    let server = start(&SCRIPT_EXECUTOR);
    let data = server.dir().join("data");
    let (started, gate) = (server.dir().join("started"), server.dir().join("gate"));
    let fds = server.dir().join("fds");
    let client = Raw2026::new(&server.url, "agent-a");
    let script = format!(
        "ls -l /proc/$$/fd > '{}'; touch '{}'; while [ ! -e '{}' ]; do sleep 0.02; done; echo finished",
        fds.display(),
        started.display(),
        gate.display()
    );
    let created = client.execute(&script);
    let task = created["taskId"].as_str().unwrap().to_owned();
    wait_for_file(&started);
    // Executors never inherit the lock: one outliving a crashed Handoff must not hold it.
    let open = std::fs::read_to_string(&fds).unwrap();
    assert!(!open.contains(handoff_server::LOCK_FILE), "{open}");

    let pid = server.child.id();
    assert_refused(&second_instance(&data, &["--port", "0"]), &data, pid);
    assert_refused(&second_instance(&data, &["--stdio"]), &data, pid);

    // Neither refused instance touched the run: it is still going and ends on its own.
    assert_eq!(client.get(&task)["result"]["status"], "working");
    std::fs::write(&gate, "").unwrap();
    let done = client.poll(
        &task,
        &["completed", "failed", "cancelled"],
        Duration::from_secs(30),
    );
    assert_eq!(done["status"], "completed", "{done}");
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["status"], "completed", "{done}");
    assert_eq!(result["output_tail"], serde_json::json!(["finished"]));
}
