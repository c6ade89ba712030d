//! Follows one ACP agent process: walks it through `initialize` and `session/new` (or
//! `session/load`) to a prompt turn, turns its updates into task events and its permission
//! requests into input requests, sends waiting messages as the next turn, lets it go once no
//! turn runs and nothing waits, and reports how the run ended.

use std::sync::{
    Arc, Mutex, PoisonError,
    atomic::{AtomicBool, Ordering},
};

use async_trait::async_trait;
use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{
    mapping::{Reader, Signal},
    protocol,
    session::Session,
};
use crate::{
    RunEvent, RunOutcome,
    agent_process::{self, Driver as _, Link, jsonrpc},
    command::CommandControl,
};

/// Room for bursts of updates while the engine is busy.
const EVENT_BUFFER: usize = 256;

/// How often a running agent's cgroup is asked whether the kernel killed one of its processes
/// for memory (one small file read).
const LIMIT_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// What the driver and the control handle share.
pub(crate) struct Shared {
    pub link: Link<Session>,
    /// Handoff refused a permission: some adapters (Codex's) then end the turn `cancelled`.
    denied: AtomicBool,
    /// The run's events (a cancel reports the requests it withdrew).
    events: mpsc::Sender<RunEvent>,
    /// Why the run was killed: the kernel killed one of its processes for memory.
    limit: Mutex<Option<String>>,
}

impl Shared {
    /// The shared state, and the receiving end of the run's events.
    pub fn new(process: CommandControl) -> (Arc<Self>, mpsc::Receiver<RunEvent>) {
        let (events, rx) = mpsc::channel(EVENT_BUFFER);
        let shared = Self {
            link: Link::new(process, "the ACP agent"),
            denied: AtomicBool::new(false),
            events,
            limit: Mutex::new(None),
        };
        (Arc::new(shared), rx)
    }

    /// Marks the run as being cancelled; no message is taken after this. Every permission
    /// request still waiting is answered `cancelled`, as the protocol requires.
    pub async fn cancel(&self) {
        self.link.cancel();
        let asks = self.link.session().take_asks();
        for id in asks {
            self.link.write(&protocol::cancelled(&id)).await;
            let settled = RunEvent::InputSettled {
                id: jsonrpc::id_text(&id),
            };
            let _ = self.events.send(settled).await;
        }
    }

    /// Records that a permission was refused.
    pub fn denied(&self) {
        self.denied.store(true, Ordering::SeqCst);
    }
}

/// What the handshake needs besides the process.
pub(crate) struct Settings {
    /// Held by a run that starts before any run of its executor reached a session; released
    /// (marked warmed) once this one does, or dropped when it fails.
    pub first: Option<tokio::sync::OwnedMutexGuard<bool>>,
    /// The executor's name, for messages.
    pub agent: String,
    /// The task's prompt, sent as the first turn.
    pub prompt: String,
    /// The task directory, as the session's cwd.
    pub cwd: String,
    /// Continue this stored session instead of starting one.
    pub load_session: Option<String>,
    /// MCP servers the session gets (those the agent can reach; see `initialized`).
    pub mcp_servers: Arc<[handoff_task::AcpMcpServer]>,
    /// The agent already answered `initialize` with this (a pooled agent).
    pub initialized: Option<Value>,
    /// The agent's home, removed once the run ended (nothing will continue it).
    pub discard_home: Option<std::path::PathBuf>,
}

/// Starts translating the process's events into `shared`'s channel; `preface` is what the
/// process said before this run took it (a pooled agent's start).
pub(crate) fn start(
    shared: Arc<Shared>,
    settings: Settings,
    inner: mpsc::Receiver<RunEvent>,
    preface: Vec<RunEvent>,
) {
    tokio::spawn(watch_limits(Arc::clone(&shared)));
    let tx = shared.events.clone();
    tokio::spawn(
        Driver {
            shared,
            settings,
            tx,
            reader: Reader::default(),
            last_stop: None,
            fatal: None,
        }
        .run(inner, preface),
    );
}

/// Ends the run as soon as the kernel kills any process of it at the task's memory limit.
/// The agent itself usually survives its tool's child being killed and would go on as if the
/// step had merely failed (or the kernel picks the agent, the largest process, and the run
/// ends with no word of why); the limit is the task's, so the whole run ends and fails
/// `out of memory` (as a `command` run killed at it does). A fork refused at the process
/// limit is left to the agent, which sees the error and may recover.
async fn watch_limits(shared: Arc<Shared>) {
    let process = &shared.link.process;
    while process.is_running() {
        if let Some(reason) = process.killed_at_limit().await {
            tracing::info!(%reason, "the kernel killed a process of an ACP agent's task");
            *shared.limit.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
            if let Err(e) = process.kill() {
                tracing::debug!(error = %e, "killing the agent at its limit");
            }
            return;
        }
        tokio::time::sleep(LIMIT_POLL).await;
    }
}

struct Driver {
    shared: Arc<Shared>,
    settings: Settings,
    tx: mpsc::Sender<RunEvent>,
    reader: Reader,
    /// How the latest turn ended: its stop reason, or the agent's error.
    last_stop: Option<Result<String, String>>,
    /// Why the run cannot go on (the handshake failed).
    fatal: Option<String>,
}

impl Driver {
    async fn run(mut self, inner: mpsc::Receiver<RunEvent>, preface: Vec<RunEvent>) {
        for event in preface {
            self.emit(event).await;
        }
        if let Some(init) = self.settings.initialized.take() {
            self.initialized(&init).await;
        }
        agent_process::follow(self, inner).await;
    }
}

#[async_trait]
impl agent_process::Driver for Driver {
    fn agent(&self) -> &str {
        &self.settings.agent
    }

    fn events(&self) -> &mpsc::Sender<RunEvent> {
        &self.tx
    }

    async fn message(&mut self, value: &Value) {
        for signal in self.reader.read(value) {
            match signal {
                Signal::Event(event) => self.emit(RunEvent::Event(event)).await,
                Signal::Input(request) => {
                    let id = request.detail.get("rpc_id").cloned().unwrap_or(Value::Null);
                    if self.shared.link.cancelled() {
                        self.shared.link.write(&protocol::cancelled(&id)).await;
                        continue;
                    }
                    self.shared.link.session().asked(id);
                    self.emit(RunEvent::InputRequested(request)).await;
                }
                Signal::Unsupported(id) => self.shared.link.write(&jsonrpc::unsupported(&id)).await,
                Signal::Acknowledged(id) => {
                    self.shared
                        .link
                        .write(&jsonrpc::response(&id, Value::Null))
                        .await;
                }
                Signal::Response(id, result) => self.response(&id, result).await,
            }
        }
    }

    async fn finish(mut self, outcome: RunOutcome) {
        for signal in self.reader.flush() {
            if let Signal::Event(event) = signal {
                self.emit(RunEvent::Event(event)).await;
            }
        }
        let limit = self
            .shared
            .limit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let seen = Seen {
            cancelled: self.shared.link.cancelled(),
            limit: limit.or_else(|| outcome.limit_reached.clone()),
            fatal: self.fatal.take(),
            last_stop: self.last_stop.take(),
            denied: self.shared.denied.load(Ordering::SeqCst),
        };
        let error = seen.error(&self.settings.agent, outcome.error.as_deref());
        let result = RunOutcome {
            success: error.is_none(),
            error,
            output: self.reader.answer.take(),
            ..outcome
        };
        if let Some(home) = self.settings.discard_home.take() {
            crate::agent_home::remove(&home);
        }
        let _ = self.tx.send(RunEvent::Finished(result)).await;
    }
}

impl Driver {
    /// Answers to Handoff's own requests drive the handshake and the turns.
    async fn response(&mut self, id: &str, result: Result<Value, String>) {
        let agent = self.settings.agent.clone();
        match (id, result) {
            (protocol::INITIALIZE, Ok(init)) => self.initialized(&init).await,
            (protocol::INITIALIZE, Err(e)) => {
                self.fatal(format!("{agent} did not start: {e}")).await
            }
            (protocol::SESSION, Ok(session)) => {
                self.reader.replaying = false;
                let loaded = self.settings.load_session.clone();
                let Some(session) = session
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or(loaded)
                else {
                    return self
                        .fatal(format!("{agent} started a session without an id"))
                        .await;
                };
                if let Some(mut first) = self.settings.first.take() {
                    *first = true;
                }
                self.emit(RunEvent::Event(
                    NewEvent::new(EventKind::Log, format!("{agent} session started"))
                        .with_data(json!({ "session_id": session })),
                ))
                .await;
                let line = self
                    .shared
                    .link
                    .session()
                    .started(&session, &self.settings.prompt);
                self.shared.link.write(&line).await;
            }
            (protocol::SESSION, Err(e)) => {
                self.fatal(format!("{agent} could not start a session: {e}"))
                    .await
            }
            (id, result) => {
                let Some(turn) = id
                    .strip_prefix(protocol::PROMPT_PREFIX)
                    .and_then(|n| n.parse::<u64>().ok())
                else {
                    return;
                };
                self.turn_end(turn, result).await;
            }
        }
    }

    async fn initialized(&mut self, init: &Value) {
        let agent = self.settings.agent.clone();
        let version = init.get("protocolVersion").and_then(Value::as_u64);
        if version != Some(protocol::PROTOCOL_VERSION) {
            let said = version.map_or("none".to_owned(), |v| v.to_string());
            return self
                .fatal(format!(
                    "{agent} speaks ACP version {said}; Handoff speaks {}",
                    protocol::PROTOCOL_VERSION
                ))
                .await;
        }
        let info = init.get("agentInfo").cloned().unwrap_or(Value::Null);
        self.emit(RunEvent::Event(
            NewEvent::new(
                EventKind::Log,
                format!(
                    "{agent}: {} {}",
                    info.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("ACP agent"),
                    info.get("version").and_then(Value::as_str).unwrap_or("")
                ),
            )
            .with_data(json!({ "agent_info": info,
                "agent_capabilities": init.get("agentCapabilities") })),
        ))
        .await;
        let servers = self.mcp_servers(init).await;
        let line = match self.settings.load_session.clone() {
            None => protocol::session_new(&self.settings.cwd, &servers),
            Some(session) => {
                let loads = init.pointer("/agentCapabilities/loadSession") == Some(&json!(true));
                if !loads {
                    return self
                        .fatal(format!(
                            "{agent} cannot load a session, so it cannot continue"
                        ))
                        .await;
                }
                self.reader.replaying = true;
                protocol::session_load(&session, &self.settings.cwd, &servers)
            }
        };
        self.shared.link.write(&line).await;
    }

    /// The configured MCP servers in ACP's form, less those over a transport the agent did
    /// not declare (noted in the task's history, so a missing tool has a reason on record).
    async fn mcp_servers(&mut self, init: &Value) -> Vec<Value> {
        let (servers, skipped) = protocol::mcp_servers(&self.settings.mcp_servers, init);
        if !skipped.is_empty() {
            let agent = self.settings.agent.clone();
            self.emit(RunEvent::Event(
                NewEvent::new(
                    EventKind::Log,
                    format!(
                        "{agent} takes no MCP servers over HTTP or SSE; not given: {}",
                        skipped.join(", ")
                    ),
                )
                .with_data(json!({ "mcp_servers_skipped": skipped })),
            ))
            .await;
        }
        servers
    }

    async fn turn_end(&mut self, turn: u64, result: Result<Value, String>) {
        if let Some(usage) = result.as_ref().ok().and_then(|done| done.get("usage")) {
            let tokens = json!({
                "input": usage.get("inputTokens").and_then(Value::as_u64).unwrap_or(0),
                "output": usage.get("outputTokens").and_then(Value::as_u64).unwrap_or(0),
            });
            self.emit(RunEvent::Event(
                NewEvent::new(EventKind::Log, "turn usage")
                    .with_data(json!({ "tokens": tokens, "usage": usage })),
            ))
            .await;
        }
        let stop = result.map(|done| {
            done.get("stopReason")
                .and_then(Value::as_str)
                .unwrap_or("end_turn")
                .to_owned()
        });
        if let Err(e) = &stop {
            self.emit(RunEvent::Event(NewEvent::new(
                EventKind::Error,
                format!("{} failed: {e}", self.settings.agent),
            )))
            .await;
        }
        let latest = self.shared.link.session().is_latest(turn);
        if latest {
            self.last_stop = Some(stop);
        }
        if self.shared.link.turn_over().await {
            return;
        }
        let next = self.shared.link.session().turn_ended();
        match next {
            Some(line) => self.shared.link.write(&line).await,
            // Once no turn runs and no message waits, EOF lets the agent exit on its own.
            None => self.shared.link.close_if_done().await,
        }
    }

    async fn fatal(&mut self, message: String) {
        // The next run tries the first start again.
        self.settings.first = None;
        self.emit(RunEvent::Event(NewEvent::new(
            EventKind::Error,
            message.clone(),
        )))
        .await;
        self.fatal = Some(message);
        self.shared.link.give_up().await;
    }
}

/// What the driver saw of a run, for how it ended.
#[derive(Debug, Default)]
struct Seen {
    cancelled: bool,
    /// The kernel killed one of the agent's processes at the task's memory limit.
    limit: Option<String>,
    /// Why the handshake failed.
    fatal: Option<String>,
    /// How the latest turn ended: its stop reason, or the agent's error.
    last_stop: Option<Result<String, String>>,
    /// Handoff refused a permission during the run.
    denied: bool,
}

impl Seen {
    /// Why the run failed, `None` when it succeeded: a cancel first, then a limit the kernel
    /// enforced (whatever the agent made of its killed child), then a failed handshake, then
    /// the latest turn. `process_error` is how the process itself ended.
    fn error(self, agent: &str, process_error: Option<&str>) -> Option<String> {
        if self.cancelled {
            return Some("cancelled".to_owned());
        }
        if let Some(reason) = self.limit.or(self.fatal) {
            return Some(reason);
        }
        match self.last_stop {
            Some(Ok(reason)) if reason == "end_turn" => None,
            // A turn the agent ended itself after a refusal is the refusal's consequence, not
            // a failure of the run (the task goes on to its checks like any other).
            Some(Ok(reason)) if reason == "cancelled" && self.denied => None,
            Some(Ok(reason)) => Some(format!("{agent} stopped: {reason}")),
            Some(Err(e)) => Some(format!("{agent} failed: {e}")),
            None => Some(format!(
                "{agent} ended without finishing a turn ({})",
                process_error.unwrap_or("no error reported")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Seen;

    fn ended(stop: &str) -> Seen {
        Seen {
            last_stop: Some(Ok(stop.to_owned())),
            ..Seen::default()
        }
    }

    #[test]
    fn a_limit_fails_a_run_whose_agent_finished_its_turn() {
        let seen = Seen {
            limit: Some("out of memory (limit 256 MiB)".to_owned()),
            ..ended("end_turn")
        };
        assert_eq!(
            seen.error("a", None).as_deref(),
            Some("out of memory (limit 256 MiB)")
        );
        // The agent killed itself: the limit, not the missing turn, is the reason.
        let seen = Seen {
            limit: Some("out of memory (limit 256 MiB)".to_owned()),
            ..Seen::default()
        };
        assert_eq!(
            seen.error("a", Some("killed by signal 9")).as_deref(),
            Some("out of memory (limit 256 MiB)")
        );
        // A cancel stays a cancel.
        let seen = Seen {
            cancelled: true,
            limit: Some("out of memory".to_owned()),
            ..Seen::default()
        };
        assert_eq!(seen.error("a", None).as_deref(), Some("cancelled"));
    }

    #[test]
    fn turns_decide_otherwise() {
        assert_eq!(ended("end_turn").error("a", None), None);
        assert_eq!(
            ended("cancelled").error("a", None).as_deref(),
            Some("a stopped: cancelled")
        );
        let refused = Seen {
            denied: true,
            ..ended("cancelled")
        };
        assert_eq!(refused.error("a", None), None);
        assert_eq!(
            Seen::default().error("a", Some("exit code 1")).as_deref(),
            Some("a ended without finishing a turn (exit code 1)")
        );
        let fatal = Seen {
            fatal: Some("a did not start: no".to_owned()),
            ..ended("end_turn")
        };
        assert_eq!(
            fatal.error("a", None).as_deref(),
            Some("a did not start: no")
        );
    }
}
