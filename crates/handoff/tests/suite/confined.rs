//! The confined OpenCode executor (`opencode-acp`: one sandboxed `opencode acp` per task in its
//! own cgroup) against the scripted model: a task cannot write outside its directory, and a
//! memory hog its agent runs is killed at the task's limit and fails the task `out of memory`.
//! One Handoff and one scripted model serve every case.

use std::{path::Path, time::Instant};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    executors::{AGENT, OPENCODE, events, handoff_env, require_ripgrep, wait_end},
    harness::{Server, start},
    mcp::{call, task_id},
};

/// The memory limit the tasks run under: well above an idle `opencode acp` (about 400 MB
/// resident here), far below the hog.
const LIMIT: &str = "768m";

fn bash(command: &str) -> Value {
    json!({"tool_calls": [{"name": "bash", "arguments": {"command": command, "description": "scripted step"}}]})
}

fn script(outside: &Path) -> Script {
    let escape = format!(
        "echo x > {}/escape; echo x > /etc/handoff-confined-escape; echo inside > {{{{cwd}}}}/inside.txt; echo wrote",
        outside.display()
    );
    // 3 GiB, every page written: the agent's process tree cannot hold it under the limit.
    let hog = "python3 -c 'b = bytearray(3 << 30); print(\"survived\", len(b))'";
    let script = json!({
        "scenarios": [
            {"match": "ESCAPE", "turns": [bash(&escape), bash(hog), {"text": "the hog ran"}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// Running processes whose command line holds the hog's allocation.
fn hogs() -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains("bytearray(3 << 30)") && !text.contains("cargo") {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

fn submit(server: &Server, prompt: &str) -> String {
    task_id(&call(
        server,
        AGENT,
        "execute_task",
        json!({"task_description": prompt}),
    ))
}

#[test]
fn the_confined_opencode_executor_is_sandboxed_and_memory_limited() {
    require_ripgrep();
    let started = Instant::now();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let outside = state.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(
            script(&outside),
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    let mut env: Vec<(String, String)> = handoff_env(&OPENCODE, &model.base_url(), state.path())
        .into_iter()
        .filter(|(k, _)| k != "HANDOFF_DEFAULT_EXECUTOR")
        .collect();
    env.extend([
        (
            "HANDOFF_DEFAULT_EXECUTOR".to_owned(),
            "opencode-acp".to_owned(),
        ),
        (
            "HANDOFF_OPENCODE_ISOLATION".to_owned(),
            "sandbox".to_owned(),
        ),
        ("HANDOFF_RUNNER_MEMORY_LIMIT".to_owned(), LIMIT.to_owned()),
        // OpenCode keeps its database and caches under the test's XDG directories (not
        // `outside`, which is a sibling of them).
        (
            "HANDOFF_SANDBOX_WRITABLE".to_owned(),
            ["home", "config", "data", "cache", "state", "tmp"]
                .map(|d| {
                    let dir = state.path().join(d);
                    std::fs::create_dir_all(&dir).unwrap();
                    dir.display().to_string()
                })
                .join(","),
        ),
    ]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);

    // One task (one agent start): the escape attempts first, then the hog.
    let id = submit(
        &server,
        "ESCAPE the task directory, then HOG all the memory",
    );
    let failed = wait_end(&server, &id);
    assert_eq!(
        failed["status"],
        "failed",
        "{failed}\n{:#?}",
        events(&server, &id)
    );
    assert_eq!(failed["error"], "out of memory (limit 768 MiB)", "{failed}");
    let workdir = Path::new(failed["workdir"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(workdir.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        !outside.join("escape").exists(),
        "wrote outside its directory"
    );
    assert!(!Path::new("/etc/handoff-confined-escape").exists());
    let said: String = events(&server, &id)
        .iter()
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect();
    assert!(
        !said.contains("survived 3221225472"),
        "the hog survived: {said}"
    );
    assert!(hogs().is_empty(), "left running: {:?}", hogs());
    eprintln!(
        "confined executor test took {:?} (the task {} ms)",
        started.elapsed(),
        failed["duration_ms"]
    );
}
