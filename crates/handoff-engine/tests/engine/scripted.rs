//! A scripted executor: every run is driven step by step by the test, which emits the run's
//! events and sees — in order — what the engine asked of the executor and of the run. Any call
//! kind can be held until the test releases it, so the order of a race is the test's choice,
//! never the scheduler's.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use handoff_runner::{
    Capabilities, Decision, Executor, InputAnswer, InputKind, InputRequest, OutputStream, Run,
    RunControl, RunEvent, RunOutcome, RunSpec, RunnerError,
};
use handoff_task::{EventKind, NewEvent, TaskId};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// The fake's name, as tasks select it.
pub const NAME: &str = "scripted";

/// How long a test waits for something the engine must do before it fails (never a guess at
/// how long the engine takes: only a bound on a hang).
pub const HANG: Duration = Duration::from_secs(30);

/// One thing the engine asked of the executor or of one of its runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Start(TaskId),
    Reattach(TaskId),
    Abandon(Value),
    Release(Value),
    Pause,
    Resume,
    Message(String),
    Answer {
        request: String,
        decision: Decision,
        message: Option<String>,
    },
    Cancel,
}

/// The kind of a [`Call`], to hold calls by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Start,
    Reattach,
    Abandon,
    Release,
    Pause,
    Resume,
    Message,
    Answer,
    Cancel,
}

impl Call {
    pub fn kind(&self) -> Kind {
        match self {
            Call::Start(_) => Kind::Start,
            Call::Reattach(_) => Kind::Reattach,
            Call::Abandon(_) => Kind::Abandon,
            Call::Release(_) => Kind::Release,
            Call::Pause => Kind::Pause,
            Call::Resume => Kind::Resume,
            Call::Message(_) => Kind::Message,
            Call::Answer { .. } => Kind::Answer,
            Call::Cancel => Kind::Cancel,
        }
    }
}

/// What a released call returns: `None` is the fake's own answer (a run that finished says so).
type Verdict = Option<Result<(), RunnerError>>;

/// A call the engine made, as the test sees it. A held call proceeds when this is released
/// (or dropped, so a failing test never leaves the engine hanging).
#[derive(Debug)]
pub struct Observed {
    pub call: Call,
    release: Option<oneshot::Sender<Verdict>>,
}

impl Observed {
    /// Lets a held call proceed with the fake's own answer.
    pub fn release(mut self) {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(None);
        }
    }

    /// Lets a held call proceed with `result`, whatever the run's state.
    pub fn release_with(mut self, result: Result<(), RunnerError>) {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(Some(result));
        }
    }
}

/// Where calls are recorded and held.
struct Gates {
    held: Mutex<HashSet<Kind>>,
    log: Mutex<Vec<Call>>,
    tx: mpsc::UnboundedSender<Observed>,
}

impl Gates {
    fn new() -> (Arc<Self>, Calls) {
        let (tx, rx) = mpsc::unbounded_channel();
        let gates = Arc::new(Self {
            held: Mutex::default(),
            log: Mutex::default(),
            tx,
        });
        (gates.clone(), Calls { gates, rx })
    }

    /// Records `call`; a held kind waits for the test.
    async fn pass(&self, call: Call) -> Verdict {
        self.log.lock().unwrap().push(call.clone());
        if !self.held.lock().unwrap().contains(&call.kind()) {
            let _ = self.tx.send(Observed {
                call,
                release: None,
            });
            return None;
        }
        let (release, verdict) = oneshot::channel();
        let _ = self.tx.send(Observed {
            call,
            release: Some(release),
        });
        verdict.await.unwrap_or(None)
    }
}

/// The test's view of the calls made to an executor or to one run.
pub struct Calls {
    gates: Arc<Gates>,
    rx: mpsc::UnboundedReceiver<Observed>,
}

impl Calls {
    /// Calls of `kind` wait for the test's release from now on.
    pub fn hold(&self, kind: Kind) {
        self.gates.held.lock().unwrap().insert(kind);
    }

    /// The next call, in the order they were made.
    pub async fn next(&mut self) -> Observed {
        tokio::time::timeout(HANG, self.rx.recv())
            .await
            .expect("the engine made no further call")
            .expect("the fake is gone")
    }

    /// Every call so far, in order.
    pub fn log(&self) -> Vec<Call> {
        self.gates.log.lock().unwrap().clone()
    }
}

/// A run of the fake, as both sides share it.
struct RunShared {
    events: mpsc::Sender<RunEvent>,
    finished: AtomicBool,
    gates: Arc<Gates>,
}

impl RunShared {
    /// Sends the run's last event unless it was sent already; whether this one was.
    async fn finish(&self, outcome: RunOutcome) -> bool {
        if self.finished.swap(true, Ordering::SeqCst) {
            return false;
        }
        let _ = self.events.send(RunEvent::Finished(outcome)).await;
        true
    }

    fn answer(&self, verdict: Verdict) -> Result<(), RunnerError> {
        match verdict {
            Some(result) => result,
            None if self.finished.load(Ordering::SeqCst) => Err(RunnerError::Finished),
            None => Ok(()),
        }
    }
}

struct Control(Arc<RunShared>);

#[async_trait]
impl RunControl for Control {
    async fn send_message(&self, message: &str) -> Result<(), RunnerError> {
        let verdict = self.0.gates.pass(Call::Message(message.to_owned())).await;
        self.0.answer(verdict)
    }

    async fn pause(&self) -> Result<(), RunnerError> {
        let verdict = self.0.gates.pass(Call::Pause).await;
        self.0.answer(verdict)
    }

    async fn resume(&self) -> Result<(), RunnerError> {
        let verdict = self.0.gates.pass(Call::Resume).await;
        self.0.answer(verdict)
    }

    /// Like a real executor: once released, the run is over and its stream ends.
    async fn cancel(&self, _grace: Duration) -> Result<(), RunnerError> {
        let verdict = self.0.gates.pass(Call::Cancel).await;
        self.0
            .finish(RunOutcome {
                error: Some("killed by cancel".to_owned()),
                ..RunOutcome::default()
            })
            .await;
        verdict.unwrap_or(Ok(()))
    }

    async fn answer(
        &self,
        request: &InputRequest,
        answer: &InputAnswer,
    ) -> Result<(), RunnerError> {
        let call = Call::Answer {
            request: request.id.clone(),
            decision: answer.decision,
            message: answer.message.clone(),
        };
        let verdict = self.0.gates.pass(call).await;
        self.0.answer(verdict)
    }
}

/// The test's handle on one started (or re-attached) run.
pub struct RunHandle {
    pub task: TaskId,
    pub prompt: String,
    pub calls: Calls,
    shared: Arc<RunShared>,
}

impl RunHandle {
    pub async fn emit(&self, event: RunEvent) {
        self.shared
            .events
            .send(event)
            .await
            .expect("the engine stopped following the run");
    }

    pub async fn output(&self, line: &str) {
        self.emit(RunEvent::Output {
            stream: OutputStream::Stdout,
            line: line.to_owned(),
        })
        .await;
    }

    pub async fn tool(&self, tool: &str) {
        let event = NewEvent::new(EventKind::Tool, format!("tool {tool}"))
            .with_data(json!({ "tool": tool, "state": "started" }));
        self.emit(RunEvent::Event(event)).await;
    }

    pub async fn ask(&self, request: InputRequest) {
        self.emit(RunEvent::InputRequested(request)).await;
    }

    pub async fn settled(&self, id: &str) {
        self.emit(RunEvent::InputSettled { id: id.to_owned() })
            .await;
    }

    /// Ends the run; false if it had ended already (a cancel finished it).
    pub async fn finish(&self, outcome: RunOutcome) -> bool {
        self.shared.finish(outcome).await
    }

    pub async fn succeed(&self) -> bool {
        self.finish(RunOutcome {
            success: true,
            ..RunOutcome::default()
        })
        .await
    }
}

/// A question for the owner: always asked, whatever the rules.
pub fn question(id: &str, title: &str) -> InputRequest {
    InputRequest {
        id: id.to_owned(),
        kind: InputKind::Question,
        permission: "question".to_owned(),
        patterns: Vec::new(),
        title: title.to_owned(),
        detail: json!({}),
    }
}

/// A permission request to run `command`.
pub fn permission(id: &str, command: &str) -> InputRequest {
    InputRequest {
        id: id.to_owned(),
        kind: InputKind::Permission,
        permission: "bash".to_owned(),
        patterns: vec![command.to_owned()],
        title: format!("run `{command}`"),
        detail: json!({ "command": command }),
    }
}

/// The executor the engine is given.
pub struct ScriptedExecutor {
    capabilities: Capabilities,
    gates: Arc<Gates>,
    runs: mpsc::UnboundedSender<RunHandle>,
}

/// The test's side of the executor: its calls and the runs it started.
pub struct Script {
    pub calls: Calls,
    runs: mpsc::UnboundedReceiver<RunHandle>,
}

impl Script {
    /// The next run the engine started or re-attached.
    pub async fn next_run(&mut self) -> RunHandle {
        tokio::time::timeout(HANG, self.runs.recv())
            .await
            .expect("the engine started no run")
            .expect("the fake is gone")
    }
}

impl ScriptedExecutor {
    pub fn new(capabilities: Capabilities) -> (Arc<Self>, Script) {
        let (gates, calls) = Gates::new();
        let (runs, rx) = mpsc::unbounded_channel();
        let executor = Arc::new(Self {
            capabilities,
            gates,
            runs,
        });
        (executor, Script { calls, runs: rx })
    }

    fn run(&self, spec: &RunSpec) -> Run {
        let (events, rx) = mpsc::channel(64);
        let (gates, calls) = Gates::new();
        let shared = Arc::new(RunShared {
            events,
            finished: AtomicBool::new(false),
            gates,
        });
        let _ = self.runs.send(RunHandle {
            task: spec.task_id.clone(),
            prompt: spec.prompt.clone(),
            calls,
            shared: shared.clone(),
        });
        Run {
            events: rx,
            control: Box::new(Control(shared)),
            state: Some(json!({ "fake": spec.task_id.as_str() })),
        }
    }
}

#[async_trait]
impl Executor for ScriptedExecutor {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn start(&self, spec: RunSpec) -> Result<Run, RunnerError> {
        self.gates
            .pass(Call::Start(spec.task_id.clone()))
            .await
            .unwrap_or(Ok(()))?;
        Ok(self.run(&spec))
    }

    /// Re-attaches whenever the capability says it can.
    async fn reattach(&self, spec: RunSpec, _state: &Value) -> Result<Option<Run>, RunnerError> {
        self.gates
            .pass(Call::Reattach(spec.task_id.clone()))
            .await
            .unwrap_or(Ok(()))?;
        Ok(self.capabilities.reattach.then(|| self.run(&spec)))
    }

    async fn abandon(&self, state: &Value) -> Result<(), RunnerError> {
        self.gates
            .pass(Call::Abandon(state.clone()))
            .await
            .unwrap_or(Ok(()))
    }

    /// Continues the session: a new run handed to the test, with the continuation prompt.
    async fn resume(
        &self,
        spec: RunSpec,
        _state: &Value,
        prompt: &str,
    ) -> Result<Run, RunnerError> {
        let spec = RunSpec {
            prompt: prompt.to_owned(),
            ..spec
        };
        Ok(self.run(&spec))
    }

    async fn release(&self, state: &Value) -> Result<(), RunnerError> {
        self.gates
            .pass(Call::Release(state.clone()))
            .await
            .unwrap_or(Ok(()))
    }
}
