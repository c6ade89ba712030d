//! Follows one Claude Code process: its stream-json lines become task events, its permission
//! prompts become input requests, and its last `result` decides how the run ended.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{sync::mpsc, time::Instant};

use super::mapping::{Signal, StreamReader};
use crate::{
    RunEvent, RunOutcome,
    agent_stderr::StderrTail,
    command::CommandControl,
    json_lines::{Said, sort},
};

/// After a turn ends with prompts still unanswered, how long Claude Code may stay silent before
/// Handoff takes it that the follow-ups were folded into the finished turn.
const QUIET_AFTER_TURN: Duration = Duration::from_secs(5);

/// What the driver and the control handle share.
pub(crate) struct Shared {
    pub process: CommandControl,
    /// User lines written (the prompt, then each message).
    prompts: AtomicUsize,
    results: AtomicUsize,
    cancelled: AtomicBool,
}

impl Shared {
    pub fn new(process: CommandControl) -> Self {
        Self {
            process,
            prompts: AtomicUsize::new(1),
            results: AtomicUsize::new(0),
            cancelled: AtomicBool::new(false),
        }
    }

    /// Counts a follow-up message.
    pub fn prompted(&self) {
        self.prompts.fetch_add(1, Ordering::SeqCst);
    }

    /// Marks the run as being cancelled.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    fn all_answered(&self) -> bool {
        self.results.load(Ordering::SeqCst) >= self.prompts.load(Ordering::SeqCst)
    }
}

/// Starts translating the process's events.
pub(crate) fn start(
    shared: Arc<Shared>,
    inner: mpsc::Receiver<RunEvent>,
) -> mpsc::Receiver<RunEvent> {
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(
        Driver {
            shared,
            tx,
            reader: StreamReader::default(),
            answer: None,
            last_turn: None,
            close_at: None,
        }
        .run(inner),
    );
    rx
}

struct Driver {
    shared: Arc<Shared>,
    tx: mpsc::Sender<RunEvent>,
    reader: StreamReader,
    answer: Option<String>,
    last_turn: Option<(bool, String)>,
    /// When to close stdin if Claude Code stays quiet.
    close_at: Option<Instant>,
}

impl Driver {
    async fn run(mut self, mut inner: mpsc::Receiver<RunEvent>) {
        let mut stderr = StderrTail::new("Claude Code");
        loop {
            let close_at = self.close_at;
            let event = tokio::select! {
                event = inner.recv() => event,
                () = sleep_until(close_at) => {
                    self.close_at = None;
                    self.shared.process.close_input().await;
                    continue;
                }
            };
            match sort(event, "Claude Code") {
                Said::Json(value) => self.line(&value).await,
                Said::Other(event) => {
                    if let Some(event) = stderr.take(event) {
                        self.emit(event).await;
                    }
                }
                Said::Ended(outcome) => {
                    if let Some(note) = stderr.note_for(&outcome) {
                        self.emit(note).await;
                    }
                    return self.finish(outcome).await;
                }
            }
        }
    }

    async fn emit(&self, event: RunEvent) {
        let _ = self.tx.send(event).await;
    }

    async fn line(&mut self, value: &Value) {
        // Any output means Claude Code is still at work.
        self.close_at = None;
        for signal in self.reader.read(value) {
            match signal {
                Signal::Event(event) => self.emit(RunEvent::Event(event)).await,
                Signal::Answer(text) => self.answer = Some(text),
                Signal::Input(request) => self.emit(RunEvent::InputRequested(request)).await,
                Signal::Unsupported(id) => {
                    let reply = json!({ "type": "control_response", "response": {
                        "subtype": "error", "request_id": id,
                        "error": "not supported by Handoff",
                    }});
                    let _ = self.shared.process.write_line(&reply.to_string()).await;
                }
                Signal::TurnEnd { is_error, text } => {
                    self.shared.results.fetch_add(1, Ordering::SeqCst);
                    self.last_turn = Some((is_error, text));
                    if self.shared.all_answered() {
                        // Nothing more to say: EOF lets Claude Code exit on its own.
                        self.shared.process.close_input().await;
                    } else {
                        self.close_at = Some(Instant::now() + QUIET_AFTER_TURN);
                    }
                }
            }
        }
    }

    async fn finish(self, outcome: RunOutcome) {
        let cancelled = self.shared.cancelled.load(Ordering::SeqCst);
        let outcome = match (cancelled, self.last_turn) {
            (true, _) => RunOutcome {
                success: false,
                error: Some("cancelled".to_owned()),
                ..outcome
            },
            (false, Some((false, text))) => RunOutcome {
                success: true,
                error: None,
                output: self.answer.or(Some(text)),
                ..outcome
            },
            (false, Some((true, text))) => RunOutcome {
                success: false,
                error: Some(format!("Claude Code failed: {text}")),
                output: self.answer,
                ..outcome
            },
            (false, None) => RunOutcome {
                success: false,
                error: Some(format!(
                    "Claude Code ended without finishing a turn ({})",
                    outcome.error.as_deref().unwrap_or("no error reported")
                )),
                ..outcome
            },
        };
        let _ = self.tx.send(RunEvent::Finished(outcome)).await;
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
