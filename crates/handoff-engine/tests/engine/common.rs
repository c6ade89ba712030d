use std::{collections::BTreeMap, sync::Arc, time::Duration};

use handoff_config::{Config, LoadOptions};
use handoff_engine::{Engine, EngineMetrics, Integration, SubmitRequest, Submitted};
use handoff_runner::{CommandConfig, CommandExecutor, ExecutorRegistry, PromptVia};
use handoff_store::SqliteStore;
use handoff_task::{AgentId, EventKind, Task, TaskId, TaskStatus};
use tempfile::TempDir;

/// An engine whose tasks are shell scripts: the task description is run by `bash -c`.
pub struct Harness {
    pub engine: Engine,
    pub dir: TempDir,
}

/// The engine's view of an agent calling as itself.
pub fn as_agent(id: &AgentId) -> handoff_task::Principal {
    handoff_task::Principal::Agent(id.clone())
}

pub fn agent(name: &str) -> AgentId {
    AgentId::parse(name).unwrap()
}

pub fn config(dir: &TempDir, env: &[(&str, &str)]) -> Config {
    let mut vars: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    vars.insert("HANDOFF_DATA_DIR".into(), dir.path().display().to_string());
    vars.entry("HANDOFF_CANCEL_GRACE_MS".into())
        .or_insert_with(|| "500".into());
    vars.entry("HANDOFF_SUBMISSIONS_PER_MINUTE".into())
        .or_insert_with(|| "0".into());
    vars.entry("HANDOFF_DEFAULT_EXECUTOR".into())
        .or_insert_with(|| "command".into());
    Config::load(LoadOptions {
        env: vars,
        ..LoadOptions::default()
    })
    .unwrap()
}

pub async fn start_in(dir: TempDir, env: &[(&str, &str)]) -> Harness {
    let store = SqliteStore::open(&config(&dir, env).database_path())
        .await
        .unwrap();
    start_on(dir, env, Arc::new(store)).await
}

/// An engine in `dir` on `store` (opened on `dir`'s database).
pub async fn start_on(
    dir: TempDir,
    env: &[(&str, &str)],
    store: Arc<dyn handoff_store::Store>,
) -> Harness {
    start_plugged(dir, env, store, Vec::new()).await
}

/// [`start_on`] with `integrations` plugged in.
pub async fn start_plugged(
    dir: TempDir,
    env: &[(&str, &str)],
    store: Arc<dyn handoff_store::Store>,
    integrations: Vec<Arc<dyn Integration>>,
) -> Harness {
    let config = Arc::new(config(&dir, env));
    let mut executors = ExecutorRegistry::new();
    executors.register(Arc::new(
        CommandExecutor::new(CommandConfig {
            argv: vec!["bash".into(), "-c".into(), "{prompt}".into()],
            prompt_via: PromptVia::Argument,
            messages_via_stdin: true,
            env: Vec::new(),
            message_format: Default::default(),
            isolation: None,
        })
        .unwrap(),
    ));
    let engine = Engine::new(config, store, executors, EngineMetrics::unregistered()).unwrap();
    engine.run(integrations).await.unwrap();
    Harness { engine, dir }
}

pub async fn start(env: &[(&str, &str)]) -> Harness {
    start_in(tempfile::tempdir().unwrap(), env).await
}

pub fn script(text: &str) -> SubmitRequest {
    SubmitRequest {
        description: text.to_owned(),
        ..SubmitRequest::default()
    }
}

impl Harness {
    pub async fn submit(&self, who: &str, text: &str) -> Submitted {
        self.engine.submit(&agent(who), script(text)).await.unwrap()
    }

    pub async fn wait_done(&self, who: &str, id: &TaskId) -> Task {
        let task = self
            .engine
            // Generous: under a loaded machine (CI compiling beside the tests) a run can be slow.
            .wait(&as_agent(&agent(who)), id, Duration::from_secs(90))
            .await
            .unwrap();
        assert!(task.status.is_terminal(), "{id} still {}", task.status);
        task
    }

    /// Waits until the task is in `status`.
    pub async fn wait_status(&self, who: &str, id: &TaskId, status: TaskStatus) -> Task {
        let caller = as_agent(&agent(who));
        wait_until(&format!("{id} to become {status}"), PATIENCE, async || {
            let task = self
                .engine
                .status(&caller, id)
                .await
                .map(|v| v.task)
                .unwrap();
            if task.status == status {
                Ok(task)
            } else {
                Err(task.status)
            }
        })
        .await
    }

    /// Waits until an output line satisfying `pred` was recorded; returns that line.
    pub async fn wait_output(&self, who: &str, id: &TaskId, pred: impl Fn(&str) -> bool) -> String {
        wait_until(
            &format!("matching output from {id}"),
            PATIENCE,
            async || {
                let lines = self.outputs(who, id).await;
                lines.iter().find(|m| pred(m)).cloned().ok_or(lines)
            },
        )
        .await
    }

    /// Every output line recorded so far, in order (an event may hold several lines).
    pub async fn outputs(&self, who: &str, id: &TaskId) -> Vec<String> {
        let history = self
            .engine
            .history(&as_agent(&agent(who)), id, 0, 1000, false)
            .await
            .unwrap();
        history
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Output)
            .flat_map(|e| e.message.split('\n').map(str::to_owned))
            .collect()
    }

    /// The pid the command executor recorded for the task's process group.
    pub async fn pid(&self, who: &str, id: &TaskId) -> i32 {
        let caller = as_agent(&agent(who));
        wait_until(&format!("a pid recorded for {id}"), PATIENCE, async || {
            let history = self
                .engine
                .history(&caller, id, 0, 1000, false)
                .await
                .unwrap();
            let pid = history
                .events
                .iter()
                .find_map(|e| e.data.get("pid").and_then(|p| p.as_i64()));
            pid.map(|p| p as i32).ok_or(history.events.len())
        })
        .await
    }
}

/// How long a wait on a fact may take before the test fails: a safety net, never what decides
/// a result (under a loaded machine, CI compiling beside the tests, a run can be slow).
pub const PATIENCE: Duration = Duration::from_secs(90);

/// Looks at `probe` until it yields `Ok`, with a short back-off between looks; after
/// `deadline` panics with `what` and the last observation (`Err`).
pub async fn wait_until<T, O: std::fmt::Debug>(
    what: &str,
    deadline: Duration,
    mut probe: impl AsyncFnMut() -> Result<T, O>,
) -> T {
    let give_up = std::time::Instant::now() + deadline;
    let mut pause = Duration::from_millis(5);
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                std::time::Instant::now() < give_up,
                "waited {deadline:?} for {what}; last seen: {seen:?}"
            ),
        }
        // The engine's tests' one sleep: the pause between two looks at a fact.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// The states of the live members of process group `pgid` (`T`: stopped).
pub fn group_states(pgid: i32) -> Vec<char> {
    let stat = |pid: i32| -> Option<(char, i32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
        let state = fields.next()?.chars().next()?;
        Some((state, fields.nth(1)?.parse().ok()?))
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter_map(stat)
        .filter(|&(state, pgrp)| pgrp == pgid && state != 'Z')
        .map(|(state, _)| state)
        .collect()
}

/// The bytes process `pid` (with the children it reaped) has written (`wchar` of
/// `/proc/<pid>/io`).
pub fn written_bytes(pid: i32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

/// Whether any process with this pid exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// `git -C dir ARGS` with an identity for the test's own commits; its stdout.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}
