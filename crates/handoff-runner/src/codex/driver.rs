//! Follows one `codex app-server` process: walks it through the handshake to a running turn,
//! turns its notifications into task events and its approval requests into input requests,
//! lets it go once no turn runs and no message is pending, and reports how the run ended.

use std::sync::Arc;

use async_trait::async_trait;
use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{
    mapping::{Reader, Signal, TurnEnd},
    protocol,
    session::{PROMPT_ID, Session},
};
use crate::{
    RunEvent, RunOutcome,
    agent_process::{self, Driver as _, Link, jsonrpc},
};

/// What the driver and the control handle share.
pub(crate) type Shared = Link<Session>;

/// What the handshake needs besides the process.
pub(crate) struct Settings {
    /// The task's prompt, sent as the first turn.
    pub prompt: String,
    /// The task directory, as Codex's thread cwd.
    pub cwd: String,
    /// Model for the thread.
    pub model: Option<String>,
    /// Provider retries before Codex gives up.
    pub max_retries: u32,
    /// Continue this stored thread instead of starting one.
    pub resume_thread: Option<String>,
    /// The model gateway's OpenAI base URL, when the run was given one: the thread then uses a
    /// provider of Handoff's pointing there, with the run's token as its key.
    pub gateway: Option<String>,
}

/// Starts translating the process's events.
pub(crate) fn start(
    shared: Arc<Shared>,
    settings: Settings,
    inner: mpsc::Receiver<RunEvent>,
) -> mpsc::Receiver<RunEvent> {
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(agent_process::follow(
        Driver {
            shared,
            settings,
            tx,
            reader: Reader::default(),
            answer: None,
            last_turn: None,
            fatal: None,
        },
        inner,
    ));
    rx
}

struct Driver {
    shared: Arc<Shared>,
    settings: Settings,
    tx: mpsc::Sender<RunEvent>,
    reader: Reader,
    answer: Option<String>,
    last_turn: Option<TurnEnd>,
    /// Why the run cannot go on (the handshake failed).
    fatal: Option<String>,
}

#[async_trait]
impl agent_process::Driver for Driver {
    fn agent(&self) -> &str {
        "Codex"
    }

    fn events(&self) -> &mpsc::Sender<RunEvent> {
        &self.tx
    }

    async fn message(&mut self, value: &Value) {
        for signal in self.reader.read(value) {
            match signal {
                Signal::Event(event) => self.emit(RunEvent::Event(event)).await,
                Signal::Answer(text) => self.answer = Some(text),
                Signal::Input(request) => self.emit(RunEvent::InputRequested(request)).await,
                Signal::Settled(id) => self.emit(RunEvent::InputSettled { id }).await,
                Signal::Unsupported(id) => self.shared.write(&jsonrpc::unsupported(&id)).await,
                Signal::Response(id, result) => self.response(&id, result).await,
                Signal::TurnStarted(turn) => self.shared.session().turn_started(&turn),
                Signal::UserMessage(Some(client_id)) => self.shared.session().confirmed(&client_id),
                Signal::UserMessage(None) => {}
                Signal::TurnEnd(end) => self.turn_end(end).await,
            }
        }
    }

    async fn finish(self, outcome: RunOutcome) {
        let diff = (!self.reader.diffs.is_empty()).then(|| self.reader.diffs.join("\n"));
        let failed = |error: String, output: Option<String>| RunOutcome {
            success: false,
            error: Some(error),
            output,
            diff: diff.clone(),
            ..outcome.clone()
        };
        let result = if self.shared.cancelled() {
            failed("cancelled".to_owned(), self.answer)
        } else if let Some(fatal) = self.fatal {
            failed(fatal, self.answer)
        } else {
            match self.last_turn {
                Some(end) if end.status == "completed" => RunOutcome {
                    success: true,
                    error: None,
                    output: self.answer,
                    diff: diff.clone(),
                    ..outcome.clone()
                },
                Some(end) if end.status == "interrupted" => {
                    failed("Codex's turn was interrupted".to_owned(), self.answer)
                }
                Some(end) => failed(
                    format!(
                        "Codex failed: {}",
                        end.error.as_deref().unwrap_or("the turn failed")
                    ),
                    self.answer,
                ),
                None => failed(
                    format!(
                        "Codex ended without finishing a turn ({})",
                        outcome.error.as_deref().unwrap_or("no error reported")
                    ),
                    self.answer,
                ),
            }
        };
        let _ = self.tx.send(RunEvent::Finished(result)).await;
    }
}

impl Driver {
    /// Answers to Handoff's own requests drive the handshake.
    async fn response(&mut self, id: &str, result: Result<Value, String>) {
        match (id, result) {
            (protocol::INITIALIZE, Ok(_)) => {
                self.shared.write(&protocol::initialized()).await;
                self.shared
                    .write(&protocol::config_read(&self.settings.cwd))
                    .await;
            }
            (protocol::INITIALIZE, Err(e)) => self.fatal(format!("Codex did not start: {e}")).await,
            (protocol::CONFIG, result) => self.config_read(result).await,
            (protocol::THREAD, Ok(started)) => self.thread_started(&started).await,
            (protocol::THREAD, Err(e)) => {
                self.fatal(format!("Codex could not start a thread: {e}"))
                    .await
            }
            (id, result) => match id.strip_prefix(protocol::TURN_PREFIX) {
                Some(client_id) => self.turn_answered(client_id, result).await,
                None => {
                    if let Err(e) = result {
                        tracing::debug!(id, error = %e, "Codex refused a request");
                    }
                }
            },
        }
    }

    /// Codex's config is read: bound its provider's retries, then start or resume the thread.
    async fn config_read(&mut self, result: Result<Value, String>) {
        let overrides = match (&self.settings.gateway, &result) {
            (Some(url), _) => Some(protocol::gateway_overrides(url, self.settings.max_retries)),
            (None, Ok(read)) => protocol::retry_overrides(
                read.get("config").unwrap_or(&Value::Null),
                self.settings.max_retries,
            ),
            (None, Err(_)) => None,
        };
        let note = match (&overrides, &result) {
            (Some((provider, _)), _) => format!(
                "Codex's provider `{provider}` gives up after {} retries",
                self.settings.max_retries
            ),
            (None, Ok(_)) => {
                "Codex's provider is built in; Codex's own retry bound applies".to_owned()
            }
            (None, Err(e)) => {
                format!("could not read Codex's config ({e}); Codex's own retry bound applies")
            }
        };
        self.emit(RunEvent::Event(NewEvent::new(EventKind::Log, note)))
            .await;
        let config = overrides.map(|(_, config)| config);
        let (cwd, model) = (&self.settings.cwd, self.settings.model.as_deref());
        let line = match &self.settings.resume_thread {
            Some(thread) => protocol::thread_resume(thread, cwd, model, config),
            None => protocol::thread_start(cwd, model, config),
        };
        self.shared.write(&line).await;
    }

    /// The thread runs: record it and send the task's first turn.
    async fn thread_started(&mut self, started: &Value) {
        let Some(thread) = started.pointer("/thread/id").and_then(Value::as_str) else {
            return self
                .fatal("Codex started a thread without an id".to_owned())
                .await;
        };
        self.emit(RunEvent::Event(
            NewEvent::new(EventKind::Log, "Codex thread started").with_data(json!({
                "thread_id": thread,
                "model": started.get("model"),
                "model_provider": started.get("modelProvider"),
                "approval_policy": started.get("approvalPolicy"),
                "sandbox": started.get("sandbox"),
                "rollout": started.pointer("/thread/path"),
            })),
        ))
        .await;
        let line = self
            .shared
            .session()
            .thread_started(thread, &self.settings.prompt);
        self.shared.write(&line).await;
    }

    /// Codex accepted or refused the turn (or steer) Handoff sent as `client_id`.
    async fn turn_answered(&mut self, client_id: &str, result: Result<Value, String>) {
        match result {
            Ok(turn) => {
                let turn = turn.pointer("/turn/id").and_then(Value::as_str);
                let again = self
                    .shared
                    .session()
                    .accepted(client_id, turn.unwrap_or(""));
                if let Some(line) = again {
                    self.shared.write(&line).await;
                }
            }
            Err(e) if client_id == PROMPT_ID => {
                self.fatal(format!("Codex refused the task: {e}")).await
            }
            Err(e) => {
                self.emit(RunEvent::Event(NewEvent::new(
                    EventKind::Error,
                    format!("Codex refused a message: {e}"),
                )))
                .await;
                self.shared.session().rejected(client_id);
                self.shared.close_if_done().await;
            }
        }
    }

    async fn turn_end(&mut self, end: TurnEnd) {
        let again = self.shared.session().turn_ended(&end.id);
        self.last_turn = Some(end);
        if self.shared.turn_over().await {
            return;
        }
        for line in again {
            self.shared.write(&line).await;
        }
        // Once no turn runs and every message was seen, EOF lets Codex exit on its own.
        self.shared.close_if_done().await;
    }

    async fn fatal(&mut self, message: String) {
        self.emit(RunEvent::Event(NewEvent::new(
            EventKind::Error,
            message.clone(),
        )))
        .await;
        self.fatal = Some(message);
        self.shared.give_up().await;
    }
}
