//! The README's "Your first task", run as written on a fresh directory: `handoff init
//! --provider … --model …`, `handoff serve`, `handoff run "…"`, with the real `opencode acp`
//! (sandboxed, one started ahead of the task, as by default) and the scripted model standing in
//! for the model server the README points at, reached through Handoff's model gateway. The
//! model asserts what it was asked: the README's model name, and the README's task.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::json;

use super::{
    executors::OPENCODE,
    harness::{BIN, metric, require, spawn_server},
};

/// The README's own provider URL, replaced by the scripted model's.
const README_PROVIDER: &str = "http://127.0.0.1:11434/v1";

/// The commands of the README's first-task block that are Handoff's: init, serve, run. The
/// install lines before them are what this machine already has (this build, the suite's
/// `opencode-ai`).
struct FirstTask {
    init: String,
    serve: String,
    run: String,
}

impl FirstTask {
    fn from_readme() -> FirstTask {
        let readme =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
                .unwrap();
        let section = readme
            .split("\n## Your first task\n")
            .nth(1)
            .expect("the README has a \"Your first task\" section");
        let block = section
            .split("```sh\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("the section opens with a sh block");
        let commands: Vec<String> = block
            .lines()
            .map(|line| line.split(" # ").next().unwrap_or(line).trim().to_owned())
            .collect();
        assert_eq!(commands[0], "cargo install --locked --path crates/handoff");
        assert_eq!(commands[1], "npm install -g opencode-ai");
        let handoff: Vec<&String> = commands[2..].iter().collect();
        assert_eq!(handoff.len(), 3, "init, serve, run: {handoff:?}");
        assert!(
            handoff[0].starts_with("handoff init --provider "),
            "{handoff:?}"
        );
        assert_eq!(handoff[1], "handoff serve");
        assert!(handoff[2].starts_with("handoff run "), "{handoff:?}");
        FirstTask {
            init: handoff[0].clone(),
            serve: handoff[1].clone(),
            run: handoff[2].clone(),
        }
    }

    /// The README's task text and model name, as the model must receive them.
    fn task_text(&self) -> String {
        let quoted = self.run.strip_prefix("handoff run ").unwrap();
        quoted.trim_matches('"').to_owned()
    }

    fn model(&self) -> String {
        let words: Vec<&str> = self.init.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "--model").unwrap();
        words[at + 1].to_owned()
    }
}

/// A fresh user's machine in `dir`: `handoff` and `opencode` on PATH, a HOME of its own, no
/// Handoff variables from the caller.
fn shell(dir: &Path, line: &str) -> Command {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let opencode = require("agents/node_modules/.bin/opencode");
    let path = std::env::join_paths(
        [bin_dir.to_owned(), opencode.parent().unwrap().to_owned()]
            .into_iter()
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let mut command = Command::new("bash");
    command
        .args(["-c", &format!("exec {line}")])
        .current_dir(dir);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("HANDOFF_") {
            command.env_remove(name);
        }
    }
    let home = |name: &str| -> PathBuf {
        let path = dir.join("user").join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    };
    command
        .env("PATH", path)
        .env("HOME", home("home"))
        .env("XDG_CONFIG_HOME", home("config"))
        .env("XDG_DATA_HOME", home("data"))
        .env("XDG_CACHE_HOME", home("cache"))
        .env("XDG_STATE_HOME", home("state"))
        // This machine reaches no models.dev; the provider is the one init wrote.
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1");
    command
}

fn script(task: &str) -> Script {
    let write = (OPENCODE.write_call)("hello.py", "print(\"hello\")\n");
    let script = json!({
        "scenarios": [
            {"match": task, "turns": [{"tool_calls": [write]}, {"text": "Wrote hello.py; it prints hello."}]}
        ],
        "default": {"text": "No scenario matched: the script's default reply, nothing to change"},
        "untooled": {"text": "Hello script"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

#[test]
fn the_readmes_first_task_completes_as_written() {
    let first = FirstTask::from_readme();
    let task = first.task_text();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(&task), None))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let provider = format!("{}/v1", model.base_url());

    let init = shell(dir.path(), &first.init.replace(README_PROVIDER, &provider))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&init.stdout);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    assert!(said.contains("wrote handoff.toml"), "{said}");

    // The port is the one thing that differs: a free one, not 3500.
    let mut serve = shell(dir.path(), &first.serve);
    serve.env("HANDOFF_PORT", "0");
    let server = spawn_server(serve, tempfile::tempdir().unwrap(), "127.0.0.1");

    let mut run = shell(dir.path(), &first.run);
    run.env("HANDOFF_URL", &server.url);
    let ran = run.output().unwrap();
    let out = String::from_utf8_lossy(&ran.stdout);
    let err = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    assert!(out.contains("completed"), "{out}");
    assert!(
        out.contains("hello.py"),
        "the changed file is listed: {out}"
    );
    assert!(out.contains("Wrote hello.py"), "the answer is shown: {out}");
    // The first task after start takes the agent the pool was starting, not one of its own.
    assert!(
        out.contains("took an agent started ahead of the task"),
        "{out}"
    );

    let asked: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.scenario.as_deref() == Some(task.as_str()))
        .collect();
    assert!(
        !asked.is_empty(),
        "the model was never given the README's task"
    );
    for request in &asked {
        assert_eq!(request.body["model"], first.model(), "the model init wrote");
    }
    // OpenCode reached the provider through Handoff's gateway, which counted its calls.
    assert!(
        metric(
            &server,
            r#"handoff_gateway_calls_total{wire="openai_chat",status="2xx"}"#
        ) >= asked.len() as f64,
        "every call went through the gateway"
    );
    assert!(
        dir.path().join(".handoff/handoff.db").exists(),
        "the data dir is ./.handoff, the README says"
    );
}
