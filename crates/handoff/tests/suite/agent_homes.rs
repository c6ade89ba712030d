//! Claude Code and Codex keep each run's state in a home of their own: the real agents, driven
//! by the scripted model, plant a file in every directory of their own state (Claude Code's
//! `CLAUDE_CONFIG_DIR`, whose shell snapshots every Bash step sources; Codex's `CODEX_HOME`,
//! whose config it loads; the XDG cache, data and state directories), and neither a task
//! running at the same time nor a later one finds it; the run's home is gone once the run
//! ended, and the user's own homes (`~/.claude`, `CODEX_HOME`) never receive a transcript.

use std::{path::Path, time::Duration};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::json;

use super::{
    acp::{find_matching, find_named, submit_unchecked},
    executors::{
        Agent, CLAUDE, CODEX, WAIT_FOR_RELEASE, events, handoff_env, has_ended, status, wait_end,
        workdir,
    },
    harness::{Server, start},
    wait::wait_until,
};

/// Marks a file planted by the first task's agent.
const PLANTED: &str = "PLANTED-BY-TASK-ONE";

/// Longer than a task may run here (`HANDOFF_TASK_TIMEOUT_MS`, 180 s).
const LIMIT: Duration = Duration::from_secs(240);

#[test]
fn each_claude_code_run_keeps_its_state_in_a_home_of_its_own() {
    state_kept_apart(&CLAUDE, "CLAUDE_CONFIG_DIR", &["home/.claude"]);
}

#[test]
fn each_codex_run_keeps_its_state_in_a_home_of_its_own() {
    state_kept_apart(&CODEX, "CODEX_HOME", &["codex-home"]);
}

/// The directories of the agent's own state, `var` being its config directory's variable.
fn state_dirs(var: &str) -> String {
    [
        format!("\"${var}\""),
        "\"$XDG_CACHE_HOME\"".to_owned(),
        "\"$XDG_DATA_HOME\"".to_owned(),
        "\"$XDG_STATE_HOME\"".to_owned(),
    ]
    .join(" ")
}

/// The scripted model: PLANT writes the marker everywhere it can and where its state lives,
/// then waits for the release; LOOK lists every marker it can find and where its state lives.
fn script(agent: &Agent, var: &str) -> Script {
    let dirs = state_dirs(var);
    let plant = format!(
        "echo \"${var}\" > {{{{cwd}}}}/home.txt; for d in {dirs}; do mkdir -p \"$d\"; \
         echo x > \"$d/{PLANTED}\" && echo \"$d\" >> {{{{cwd}}}}/planted.txt; done; true"
    );
    let look = format!(
        "echo \"${var}\" > {{{{cwd}}}}/home.txt; for d in {dirs}; do find \"$d\" -name {PLANTED} \
         >> {{{{cwd}}}}/found.txt 2>/dev/null; done; echo looked > {{{{cwd}}}}/looked.txt"
    );
    let bash = |command: &str| json!({"tool_calls": [(agent.bash_call)(command)]});
    let wait = bash(WAIT_FOR_RELEASE);
    let script = json!({
        "scenarios": [
            {"match": "PLANT", "turns": [bash(&plant), wait.clone(), wait.clone(), wait.clone(), wait,
                {"text": "planted, and there is nothing to change in the task's files"}]},
            {"match": "LOOK", "turns": [bash(&look),
                {"text": "looked, and there is nothing to change in the task's files"}]}
        ],
        "default": {"text": "No scenario matched: the script's default reply, nothing to change"},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

fn state_kept_apart(agent: &Agent, var: &str, shared_homes: &[&str]) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(agent, var), None))
        .unwrap();
    let env = handoff_env(agent, &model.base_url(), state.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();

    let one = submit_unchecked(&server, "PLANT where your state lives");
    let one_dir = workdir(&server, &one);
    wait_until("the first agent to plant", LIMIT, || {
        one_dir.join("planted.txt").exists() || has_ended(&status(&server, &one))
    });
    let one_home = read(&one_dir.join("home.txt")).trim().to_owned();
    let planted = read(&one_dir.join("planted.txt"));
    assert!(
        planted.lines().any(|d| d == one_home),
        "the agent planted in its own state ({one_home}): {planted:?}\n{:#?}",
        events(&server, &one)
    );
    let data_dir = one_dir.parent().and_then(Path::parent).unwrap().to_owned();
    assert!(
        Path::new(&one_home).starts_with(data_dir.join("agent-homes").join(agent.executor)),
        "{var}={one_home} is the run's own home under {}",
        data_dir.display()
    );

    // A task at the same time, and a later one, find nothing of it in their own state.
    let concurrent = look(&server, &one_home);
    std::fs::write(one_dir.join("release"), "").unwrap();
    let done = wait_end(&server, &one);
    assert_eq!(done["status"], "completed", "{done}");
    let later = look(&server, &one_home);
    assert_ne!(concurrent, later, "each run has a home of its own");

    // The runs' homes are gone, and nothing reached the user's own homes.
    for root in [state.path(), data_dir.as_path()] {
        let left = find_named(root, PLANTED);
        assert!(left.is_empty(), "left on the host: {left:?}");
    }
    for shared in shared_homes {
        let transcripts = find_matching(&state.path().join(shared), |f| f.ends_with(".jsonl"));
        assert!(
            transcripts.is_empty(),
            "a transcript in the user's shared home: {transcripts:?}"
        );
    }
    drop(server);
    runtime.block_on(model.shutdown());
}

/// Runs a LOOK task to its end: it found no marker, and its home is not `other`'s. Its home.
fn look(server: &Server, other: &str) -> String {
    let id = submit_unchecked(server, "LOOK for what others planted");
    let done = wait_end(server, &id);
    assert_eq!(done["status"], "completed", "{done}");
    let dir = workdir(server, &id);
    assert!(dir.join("looked.txt").exists(), "{done}");
    let found = std::fs::read_to_string(dir.join("found.txt")).unwrap_or_default();
    assert_eq!(found, "", "found what another task's agent planted");
    let home = std::fs::read_to_string(dir.join("home.txt")).unwrap();
    let home = home.trim().to_owned();
    assert!(!home.is_empty() && home != other, "{home} vs {other}");
    home
}
