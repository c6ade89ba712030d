//! Isolation through the real binary: tasks of the `command` executor at level `sandbox` with
//! memory and pids limits, driven by the Python SDK — and the real OpenCode (`opencode-cli`)
//! sandboxed against the scripted model.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use handoff_scripted_model::ScriptedModel;
use serde_json::{Value, json};

use super::{
    executors::{OPENCODE, handoff_env, script},
    harness::{Server, start},
    mcp::{call, history, ok, task_id, wait_status_for},
    process::wait_frozen,
    tasks::pid,
    wait::{PATIENCE, wait_until},
};

const AGENT: &str = "agent-isolated";

fn submit(server: &Server, script: &str) -> String {
    task_id(&call(
        server,
        AGENT,
        "execute_task",
        json!({"task_description": script}),
    ))
}

fn end(server: &Server, id: &str) -> Value {
    wait_status_for(
        server,
        AGENT,
        id,
        &["completed", "failed", "cancelled", "timeout"],
        Duration::from_secs(60),
    )
}

/// Every output line of a task.
fn output(server: &Server, id: &str) -> String {
    history(server, AGENT, id)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "output")
        .map(|e| format!("{}\n", e["message"].as_str().unwrap_or_default()))
        .collect()
}

fn counter(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(marker) && !text.contains("cargo") {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

#[test]
fn sandboxed_tasks_are_confined_limited_paused_and_cancelled() {
    let server = start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_ISOLATION", "sandbox"),
        ("HANDOFF_RUNNER_MEMORY_LIMIT", "64m"),
        ("HANDOFF_RUNNER_PIDS_LIMIT", "64"),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
        ("LETTA_API_TOKEN", "s3cret-letta"),
    ]);
    let data = server.dir().join("data");

    // No inherited secret, no write outside the task directory, no view of Handoff.
    let handoff_pid = server.child.id();
    let id = submit(
        &server,
        &format!(
            "env; echo x > /etc/handoff-e2e-escape; echo x > {data}/escape; \
             kill -0 {handoff_pid} && echo signalled-handoff; echo inside > inside.txt; true",
            data = data.display()
        ),
    );
    let done = end(&server, &id);
    assert_eq!(done["status"], "completed", "{done}");
    let out = output(&server, &id);
    assert!(out.contains("PATH="), "{out}");
    // The one variable of Handoff's a run sees is the one it sets itself: the task's id.
    let marker = format!("HANDOFF_TASK_ID={id}");
    assert!(out.lines().any(|l| l == marker), "{out}");
    let out = out.replace(&marker, "");
    for leak in ["LETTA_API_TOKEN", "s3cret-letta", "HANDOFF_"] {
        assert!(!out.contains(leak), "{leak} leaked:\n{out}");
    }
    assert!(!out.contains("signalled-handoff"), "{out}");
    assert!(!Path::new("/etc/handoff-e2e-escape").exists());
    assert!(!data.join("escape").exists());
    let workdir = PathBuf::from(done["workdir"].as_str().unwrap());
    assert!(workdir.join("inside.txt").exists());

    // A memory hog dies at the limit, and the task says so.
    let id = submit(
        &server,
        "python3 -c 'b = bytearray(512 * 1024 * 1024); print(\"survived\")'",
    );
    let failed = end(&server, &id);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"], "out of memory (limit 64 MiB)", "{failed}");

    // Pause stops progress, resume continues, cancel leaves nothing behind — also a process
    // that left the group.
    let marker = format!("handoff-e2e-marker-{}", std::process::id());
    let id = submit(
        &server,
        &format!(
            "setsid bash -c 'exec -a {marker} sleep 300' & \
             i=0; while :; do i=$((i+1)); echo $i > count; sleep 0.01; done"
        ),
    );
    let running = wait_status_for(&server, AGENT, &id, &["running"], Duration::from_secs(30));
    let count = PathBuf::from(running["workdir"].as_str().unwrap()).join("count");
    wait_until("the counter to start", PATIENCE, || {
        counter(&count) >= 5 && !processes_with(&marker).is_empty()
    });
    let control = |action: &str| {
        let result = call(
            &server,
            AGENT,
            "send_task_control",
            json!({"task_id": id, "control": action}),
        );
        ok(&result).clone()
    };
    control("pause");
    let leader = pid(&server, AGENT, &id);
    wait_frozen("the paused task", &[leader]);
    let paused_at = counter(&count);
    // A twin counter in the same sandbox counts to 60 and ends meanwhile.
    let twin = submit(
        &server,
        "i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo $i > count; sleep 0.01; done",
    );
    let twin = end(&server, &twin);
    assert_eq!(twin["status"], "completed", "{twin}");
    assert_eq!(counter(&count), paused_at, "progress while paused");
    control("resume");
    wait_until("progress after resume", PATIENCE, || {
        counter(&count) > paused_at
    });
    control("cancel");
    let cancelled = end(&server, &id);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(
        processes_with(&marker).is_empty(),
        "left behind: {:?}",
        processes_with(&marker)
    );
}

#[test]
fn a_task_stopped_by_the_process_limit_says_so() {
    let server = start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_ISOLATION", "sandbox"),
        ("HANDOFF_RUNNER_PIDS_LIMIT", "32"),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
    ]);
    // The program dies of its own error at the limit; its exit code alone says nothing.
    let id = submit(
        &server,
        "python3 -c 'import subprocess; [subprocess.Popen([\"sleep\", \"30\"]) for _ in range(100)]'",
    );
    let failed = end(&server, &id);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(
        failed["error"], "process limit reached (limit 32)",
        "{failed}"
    );
}

#[test]
fn opencode_runs_sandboxed_and_completes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(&OPENCODE), None))
        .unwrap();
    let mut env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    env.extend([
        (
            "HANDOFF_OPENCODE_ISOLATION".to_owned(),
            "sandbox".to_owned(),
        ),
        // OpenCode keeps its database and caches under the test's XDG directories.
        (
            "HANDOFF_SANDBOX_WRITABLE".to_owned(),
            state.path().display().to_string(),
        ),
    ]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let id = task_id(&call(
        &server,
        AGENT,
        "execute_task",
        json!({"task_description": "CREATE-FILE in the sandbox", "executor": "opencode-cli"}),
    ));
    let done = wait_status_for(
        &server,
        AGENT,
        &id,
        &["completed", "failed", "cancelled", "timeout"],
        Duration::from_secs(120),
    );
    assert_eq!(
        done["status"],
        "completed",
        "{done}\n{:#}",
        history(&server, AGENT, &id)["events"]
    );
    let workdir = PathBuf::from(done["workdir"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(workdir.join("hello.txt")).unwrap(),
        "hello from opencode\n"
    );
    // It really ran inside bubblewrap: the launcher's record of the run says so.
    let events = history(&server, AGENT, &id)["events"].clone();
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["message"] == "process started" && e["data"]["isolation"] == "sandbox"),
        "{events:#}"
    );
}
