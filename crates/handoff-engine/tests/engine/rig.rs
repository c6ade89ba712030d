//! An engine whose only executor is the scripted fake, and the means to watch a task without
//! sleeping: wait for the store to show a state (woken by the engine's notices), and read what
//! changed since the last look as a compact trail.

use std::sync::Arc;

use handoff_engine::{Engine, EngineMetrics, SubmitRequest, TaskNotice};
use handoff_runner::{Capabilities, ExecutorRegistry};
use handoff_store::{SqliteStore, Store};
use handoff_task::{Task, TaskEvent, TaskId, TaskStatus};
use tempfile::TempDir;
use tokio::sync::broadcast;

use super::{
    common::{agent, config},
    scripted::{HANG, NAME, Script, ScriptedExecutor},
};

/// Everything a race test holds.
pub struct Rig {
    pub engine: Engine,
    pub script: Script,
    pub dir: TempDir,
    notices: broadcast::Receiver<TaskNotice>,
}

/// Settings for the fake: it is the default executor, and a run that ends well is done
/// (verification would resume the fake with prompts the test did not script).
pub fn settings(dir: &TempDir, env: &[(&str, &str)]) -> handoff_config::Config {
    let mut all = vec![
        ("HANDOFF_DEFAULT_EXECUTOR", NAME),
        ("HANDOFF_COMPLETION_POLICY", "none"),
    ];
    all.extend_from_slice(env);
    config(dir, &all)
}

/// Opens the engine's store in `dir`, as an engine started there would.
pub async fn open_store(dir: &TempDir) -> SqliteStore {
    SqliteStore::open(&settings(dir, &[]).database_path())
        .await
        .unwrap()
}

pub async fn rig(env: &[(&str, &str)], capabilities: Capabilities) -> Rig {
    rig_in(tempfile::tempdir().unwrap(), env, capabilities).await
}

pub async fn rig_in(dir: TempDir, env: &[(&str, &str)], capabilities: Capabilities) -> Rig {
    let config = Arc::new(settings(&dir, env));
    let store = SqliteStore::open(&config.database_path()).await.unwrap();
    rig_with(dir, config, Arc::new(store), capabilities).await
}

pub async fn rig_with(
    dir: TempDir,
    config: Arc<handoff_config::Config>,
    store: Arc<dyn Store>,
    capabilities: Capabilities,
) -> Rig {
    let (executor, script) = ScriptedExecutor::new(capabilities);
    let mut executors = ExecutorRegistry::new();
    executors.register(executor);
    let engine = Engine::new(config, store, executors, EngineMetrics::unregistered()).unwrap();
    // Subscribed before anything runs, so no notice is missed.
    let notices = engine.subscribe();
    engine.run(Vec::new()).await.unwrap();
    Rig {
        engine,
        script,
        dir,
        notices,
    }
}

impl Rig {
    pub async fn submit(&self, request: SubmitRequest) -> TaskId {
        self.engine
            .submit(&agent("a"), request)
            .await
            .unwrap()
            .task
            .id
    }

    /// A plain task for the fake.
    pub async fn submit_task(&self) -> TaskId {
        self.submit(SubmitRequest {
            description: "do the work".to_owned(),
            ..SubmitRequest::default()
        })
        .await
    }

    /// Waits until the stored task satisfies `done`, re-reading it on each of its notices.
    pub async fn until(&mut self, id: &TaskId, done: impl Fn(&Task, &[TaskEvent]) -> bool) {
        let wait = async {
            loop {
                let history = self
                    .engine
                    .history(&agent("a"), id, 0, 10_000, false)
                    .await
                    .unwrap();
                if done(&history.task, &history.events) {
                    return;
                }
                loop {
                    match self.notices.recv().await {
                        Ok(notice) if notice.task() == id => break,
                        Ok(_) => continue,
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => panic!("engine gone"),
                    }
                }
            }
        };
        tokio::time::timeout(HANG, wait)
            .await
            .unwrap_or_else(|_| panic!("{id} never reached the awaited state"));
    }

    /// Waits until the task is in `status`.
    pub async fn until_status(&mut self, id: &TaskId, status: TaskStatus) {
        self.until(id, |task, _| task.status == status).await;
    }

    /// Waits until an event of the task satisfies `pred`.
    pub async fn until_event(&mut self, id: &TaskId, pred: impl Fn(&TaskEvent) -> bool) {
        self.until(id, |_, events| events.iter().any(&pred)).await;
    }

    /// Waits until the task has ended.
    pub async fn until_done(&mut self, id: &TaskId) {
        self.until(id, |task, _| task.status.is_terminal()).await;
    }
}

/// One look at a task: its row's state and error, and the events recorded since the last look
/// as `kind: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub status: TaskStatus,
    pub error: Option<String>,
    pub events: Vec<String>,
}

/// A step, spelled compactly by the test.
pub fn step(status: TaskStatus, error: Option<&str>, events: &[&str]) -> Step {
    Step {
        status,
        error: error.map(str::to_owned),
        events: events.iter().map(|e| (*e).to_owned()).collect(),
    }
}

/// Reads a task's history step by step.
pub struct Trail {
    id: TaskId,
    seen: u64,
}

impl Trail {
    pub fn new(id: &TaskId) -> Self {
        Self {
            id: id.clone(),
            seen: 0,
        }
    }

    /// The task now, and what was recorded since the last step.
    pub async fn step(&mut self, engine: &Engine) -> Step {
        let history = engine
            .history(&agent("a"), &self.id, self.seen, 10_000, false)
            .await
            .unwrap();
        self.seen += history.events.len() as u64;
        Step {
            status: history.task.status,
            error: history.task.error.clone(),
            events: history
                .events
                .iter()
                .map(|e| format!("{}: {}", e.kind, e.message))
                .collect(),
        }
    }
}
