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

    /// Polls until the task is in `status`.
    pub async fn wait_status(&self, who: &str, id: &TaskId, status: TaskStatus) -> Task {
        for _ in 0..400 {
            let task = self
                .engine
                .status(&as_agent(&agent(who)), id)
                .await
                .map(|v| v.task)
                .unwrap();
            if task.status == status {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{id} never became {status}");
    }

    /// Polls until an output line satisfying `pred` was recorded; returns that line.
    pub async fn wait_output(&self, who: &str, id: &TaskId, pred: impl Fn(&str) -> bool) -> String {
        for _ in 0..400 {
            if let Some(line) = self.outputs(who, id).await.into_iter().find(|m| pred(m)) {
                return line;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no matching output from {id}");
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
        for _ in 0..400 {
            let history = self
                .engine
                .history(&as_agent(&agent(who)), id, 0, 1000, false)
                .await
                .unwrap();
            if let Some(pid) = history
                .events
                .iter()
                .find_map(|e| e.data.get("pid").and_then(|p| p.as_i64()))
            {
                return pid as i32;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no pid recorded for {id}");
    }
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
