//! An engine whose only executor is the scripted fake, and the means to watch a task without
//! sleeping: wait for the store to show a state (woken by the engine's notices), and read what
//! changed since the last look as a compact trail.

use std::sync::Arc;

use handoff_engine::{ControlReceipt, Engine, EngineError, EngineMetrics, SubmitRequest};
use handoff_protocol::tasks::ControlAction;
use handoff_runner::{Capabilities, ExecutorRegistry};
use handoff_store::{SqliteStore, Store};
use handoff_task::{Principal, Task, TaskEvent, TaskId, TaskStatus};
use tempfile::TempDir;
use tokio::{sync::broadcast, task::JoinHandle};

use super::{
    common::{agent, config},
    scripted::{HANG, NAME, Script, ScriptedExecutor},
};

/// The owner of every task in these tests.
pub fn owner() -> Principal {
    Principal::Agent(agent("a"))
}

/// Everything a race test holds.
pub struct Rig {
    pub engine: Engine,
    pub script: Script,
    /// Kept so the engine's directory outlives it.
    pub _dir: TempDir,
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
    let engine = Engine::start(config, store, executors, EngineMetrics::unregistered())
        .await
        .unwrap();
    Rig {
        engine,
        script,
        _dir: dir,
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

    /// Applies `control` in the background (a cancel waits for the run to settle).
    pub fn control(
        &self,
        id: &TaskId,
        control: ControlAction,
        reason: &str,
    ) -> JoinHandle<Result<ControlReceipt, EngineError>> {
        let (engine, id, reason) = (self.engine.clone(), id.clone(), reason.to_owned());
        tokio::spawn(async move { engine.control(&owner(), &id, control, Some(reason)).await })
    }

    /// Waits until the stored task satisfies `done`.
    pub async fn until(&self, id: &TaskId, done: impl Fn(&Task, &[TaskEvent]) -> bool) {
        until(&self.engine, id, done).await;
    }

    /// Waits until the task is in `status`.
    pub async fn until_status(&self, id: &TaskId, status: TaskStatus) {
        self.until(id, |task, _| task.status == status).await;
    }

    /// Waits until an event of the task satisfies `pred`.
    pub async fn until_event(&self, id: &TaskId, pred: impl Fn(&TaskEvent) -> bool) {
        until_event(&self.engine, id, pred).await;
    }

    /// Waits until the task has ended.
    pub async fn until_done(&self, id: &TaskId) {
        self.until(id, |task, _| task.status.is_terminal()).await;
    }
}

/// Waits until the stored task satisfies `done`, re-reading it on each of its notices.
pub async fn until(engine: &Engine, id: &TaskId, done: impl Fn(&Task, &[TaskEvent]) -> bool) {
    // Subscribed before the first read, so no change after it goes unnoticed.
    let mut notices = engine.subscribe();
    let wait = async {
        loop {
            let history = engine
                .history(&owner(), id, 0, 10_000, false)
                .await
                .unwrap();
            if done(&history.task, &history.events) {
                return;
            }
            loop {
                match notices.recv().await {
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

/// Waits until an event of the task satisfies `pred`.
pub async fn until_event(engine: &Engine, id: &TaskId, pred: impl Fn(&TaskEvent) -> bool) {
    until(engine, id, |_, events| events.iter().any(&pred)).await;
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
            .history(&owner(), &self.id, self.seen, 10_000, false)
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
