//! One task as one OpenCode session: subscribe to the directory's events, create the session
//! with its permission ruleset, prompt it, and follow the stream to a truthful end — surviving
//! a lost stream, bounding provider retry loops, relaying permission requests.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};
use tokio::{sync::mpsc, sync::watch, time::Instant};

use super::{
    client::OpenCodeClient,
    mapping::{SessionEvents, Signal},
    server::{Server, ServerProcess},
};
use crate::{InputRequest, RunEvent, RunOutcome, RunnerError, text::clip};

/// OpenCode sends a heartbeat every 10 s; this long without any frame means the stream is dead.
const SILENCE: Duration = Duration::from_secs(35);
/// Pause between reconnection attempts.
const RECONNECT_PAUSE: Duration = Duration::from_millis(500);
/// Reconnection attempts before the run is given up.
const RECONNECT_TRIES: u32 = 20;

/// How runs behave, from the executor's settings.
#[derive(Debug, Clone)]
pub(crate) struct SessionSettings {
    /// `(provider, model)` for prompts.
    pub model: Option<(String, String)>,
    /// Provider retries tolerated.
    pub retry_max_attempts: u32,
    /// Time spent retrying tolerated.
    pub retry_max: Duration,
    /// Delete the session at the end.
    pub delete_sessions: bool,
    /// The session's permission ruleset (OpenCode's format).
    pub ruleset: Value,
}

type EventStream = std::pin::Pin<Box<dyn Stream<Item = Result<Value, String>> + Send>>;

/// State shared by the driver and the control handle.
pub(crate) struct Shared {
    pub client: OpenCodeClient,
    pub session: String,
    /// Requests waiting for an answer, by id.
    pending: Mutex<HashMap<String, InputRequest>>,
    /// Set by cancel: the abort that follows ends the run as cancelled.
    cancelled: watch::Sender<bool>,
    /// Turns true once the run has reported its outcome.
    pub done: watch::Sender<bool>,
}

impl Shared {
    fn pending(&self) -> MutexGuard<'_, HashMap<String, InputRequest>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Marks the run as being cancelled.
    pub fn cancel(&self) {
        self.cancelled.send_replace(true);
    }
}

/// Which session a run prompts.
pub(crate) enum Turn<'a> {
    /// A new session with this title and ruleset (the configured one when `None`).
    New {
        /// Session title.
        title: &'a str,
        /// Permission ruleset.
        ruleset: Option<Value>,
    },
    /// The next turn of an existing session.
    Continue {
        /// Its id.
        session: &'a str,
    },
}

/// Opens the stream, creates (or reuses) and prompts the session, and starts following it;
/// with `keep_session` the session outlives the run (it may be continued).
pub(crate) async fn begin(
    server: Arc<Server>,
    client: OpenCodeClient,
    process: Option<ServerProcess>,
    settings: Arc<SessionSettings>,
    turn: Turn<'_>,
    prompt: &str,
    keep_session: bool,
) -> Result<(Arc<Shared>, mpsc::Receiver<RunEvent>), RunnerError> {
    // Subscribe before prompting so not one event of the turn is missed.
    let stream = open_stream(&client).await?;
    let (session, created) = match turn {
        Turn::New { title, ruleset } => (
            client
                .create_session(title, ruleset.unwrap_or_else(|| settings.ruleset.clone()))
                .await?,
            true,
        ),
        Turn::Continue { session } => (session.to_owned(), false),
    };
    if let Err(e) = client
        .prompt(&session, prompt, settings.model.as_ref())
        .await
    {
        if created {
            let _ = client.delete_session(&session).await;
        }
        return Err(e);
    }
    let shared = Arc::new(Shared {
        client,
        session,
        pending: Mutex::new(HashMap::new()),
        cancelled: watch::channel(false).0,
        done: watch::channel(false).0,
    });
    let (tx, rx) = mpsc::channel(256);
    let driver = Driver {
        shared: shared.clone(),
        delete_session: settings.delete_sessions && !keep_session,
        settings,
        server,
        process,
        tx,
        reader: SessionEvents::new(&shared.session),
        busy: true,
        answer: None,
        error: None,
        retry_since: None,
        last_retry: 0,
    };
    tokio::spawn(driver.run(stream));
    Ok((shared, rx))
}

async fn open_stream(client: &OpenCodeClient) -> Result<EventStream, RunnerError> {
    let response = client.events().await?;
    let stream = response.bytes_stream().eventsource().map(|frame| {
        let frame = frame.map_err(|e| e.to_string())?;
        serde_json::from_str::<Value>(&frame.data).map_err(|e| format!("bad event JSON: {e}"))
    });
    Ok(Box::pin(stream))
}

struct Driver {
    shared: Arc<Shared>,
    /// Delete the session when the run ends.
    delete_session: bool,
    settings: Arc<SessionSettings>,
    server: Arc<Server>,
    process: Option<ServerProcess>,
    tx: mpsc::Sender<RunEvent>,
    reader: SessionEvents,
    /// The session works on a turn we started (a prompt was sent and no idle seen since).
    busy: bool,
    answer: Option<String>,
    error: Option<String>,
    retry_since: Option<Instant>,
    last_retry: u64,
}

/// How the stream loop ended.
enum End {
    Idle,
    Failed(String),
}

impl Driver {
    async fn run(mut self, mut stream: EventStream) {
        let end = self.follow(&mut stream).await;
        drop(stream);
        self.finish(end).await;
    }

    async fn emit(&self, event: RunEvent) {
        // The receiver is gone only when the engine stopped listening; nothing to do then.
        let _ = self.tx.send(event).await;
    }

    async fn follow(&mut self, stream: &mut EventStream) -> End {
        let mut cancelled = self.shared.cancelled.subscribe();
        loop {
            let next = tokio::select! {
                next = tokio::time::timeout(SILENCE, stream.next()) => next,
                () = self.server_exit() => {
                    return End::Failed("the OpenCode server exited during the task".to_owned());
                }
                () = async { let _ = cancelled.wait_for(|c| *c).await; } => {
                    // Cancel sent an abort; give OpenCode a moment to report it, then stop.
                    return self.drain_after_cancel(stream).await;
                }
            };
            match next {
                Ok(Some(Ok(event))) => {
                    if let Some(end) = self.handle(&event).await {
                        return end;
                    }
                }
                Ok(Some(Err(e))) => tracing::debug!(error = %e, "skipping a bad OpenCode event"),
                Ok(None) | Err(_) => match self.reconnect().await {
                    Ok((fresh, end)) => {
                        *stream = fresh;
                        if let Some(end) = end {
                            return end;
                        }
                    }
                    Err(end) => return end,
                },
            }
        }
    }

    async fn server_exit(&self) {
        match self.process {
            Some(process) => self.server.wait_exit(process).await,
            None => std::future::pending().await,
        }
    }

    async fn drain_after_cancel(&mut self, stream: &mut EventStream) -> End {
        let limit = Instant::now() + Duration::from_secs(3);
        while let Ok(Some(Ok(event))) = tokio::time::timeout_at(limit, stream.next()).await {
            if self.handle(&event).await.is_some() {
                break;
            }
        }
        End::Failed("cancelled".to_owned())
    }

    /// Applies one event; `Some` when the run is over.
    async fn handle(&mut self, event: &Value) -> Option<End> {
        for signal in self.reader.read(event) {
            match signal {
                Signal::Event(e) => self.emit(RunEvent::Event(e)).await,
                Signal::Answer(text) => self.answer = Some(text),
                Signal::Input(request) => {
                    let fresh = self
                        .shared
                        .pending()
                        .insert(request.id.clone(), request.clone())
                        .is_none();
                    if fresh {
                        self.emit(RunEvent::InputRequested(request)).await;
                    }
                }
                Signal::InputSettled(id) => {
                    if self.shared.pending().remove(&id).is_some() {
                        self.emit(RunEvent::InputSettled { id }).await;
                    }
                }
                Signal::Busy => self.busy = true,
                Signal::Retry { attempt, message } => {
                    if let Some(end) = self.retry(attempt, message).await {
                        return Some(end);
                    }
                }
                Signal::Error(message) => {
                    self.emit(RunEvent::Event(NewEvent::new(
                        EventKind::Error,
                        message.clone(),
                    )))
                    .await;
                    self.error = Some(message);
                }
                Signal::Aborted => {
                    if !*self.shared.cancelled.borrow() {
                        self.error = Some("OpenCode aborted the turn".to_owned());
                    }
                }
                Signal::Idle => {
                    if self.busy && !self.busy_again().await {
                        self.busy = false;
                        return Some(End::Idle);
                    }
                    // A turn that goes on after a follow-up gets a fresh retry budget.
                    self.retry_since = None;
                    self.last_retry = 0;
                }
            }
        }
        None
    }

    /// A follow-up prompt sent just as a turn ended starts the next one at once.
    async fn busy_again(&self) -> bool {
        self.status_busy().await.unwrap_or(false)
    }

    /// Whether OpenCode's status map shows the session working (`None`: it could not be read).
    async fn status_busy(&self) -> Option<bool> {
        let status = self.shared.client.session_status().await.ok()?;
        Some(
            status
                .get(&self.shared.session)
                .is_some_and(|s| s.get("type").and_then(Value::as_str) != Some("idle")),
        )
    }

    /// OpenCode retries a failing provider forever; Handoff gives up at its bound.
    async fn retry(&mut self, attempt: u64, message: String) -> Option<End> {
        let since = *self.retry_since.get_or_insert_with(Instant::now);
        if attempt > self.last_retry {
            self.last_retry = attempt;
            self.emit(RunEvent::Event(
                NewEvent::new(
                    EventKind::Error,
                    format!(
                        "model provider failed, OpenCode retries (attempt {attempt}): {}",
                        clip(&message, 500)
                    ),
                )
                .with_data(json!({ "attempt": attempt, "retry": true })),
            ))
            .await;
        }
        let attempts = u64::from(self.settings.retry_max_attempts);
        if attempt > attempts || since.elapsed() > self.settings.retry_max {
            let _ = self.shared.client.abort(&self.shared.session).await;
            return Some(End::Failed(format!(
                "the model provider kept failing ({attempt} attempts over {}s): {message}",
                since.elapsed().as_secs()
            )));
        }
        None
    }

    /// Re-opens the stream and catches up on what happened while it was down.
    async fn reconnect(&mut self) -> Result<(EventStream, Option<End>), End> {
        for attempt in 1..=RECONNECT_TRIES {
            if let Some(process) = self.process
                && self.server.exited(process).await
            {
                return Err(End::Failed(
                    "the OpenCode server exited during the task".to_owned(),
                ));
            }
            tokio::time::sleep(RECONNECT_PAUSE).await;
            let Ok(stream) = open_stream(&self.shared.client).await else {
                tracing::debug!(attempt, "OpenCode event stream not back yet");
                continue;
            };
            self.emit(RunEvent::Event(NewEvent::new(
                EventKind::Log,
                "OpenCode event stream reconnected",
            )))
            .await;
            return Ok((stream, self.resync().await));
        }
        Err(End::Failed(
            "lost the OpenCode event stream and could not reconnect".to_owned(),
        ))
    }

    /// Reads current state instead of the events missed: pending requests, and whether the
    /// turn ended meanwhile.
    async fn resync(&mut self) -> Option<End> {
        for list in [
            self.shared.client.permissions().await,
            self.shared.client.questions().await,
        ] {
            let Ok(Value::Array(items)) = list else {
                continue;
            };
            for item in items {
                let kind = if item.get("questions").is_some() {
                    "question.asked"
                } else {
                    "permission.asked"
                };
                let event = json!({ "type": kind, "properties": item });
                if let Some(end) = self.handle(&event).await {
                    return Some(end);
                }
            }
        }
        // A status that cannot be read says nothing: the next silence asks again. Idle with the
        // prompt unanswered ends the turn too — with no answer, which the evaluator continues.
        if !self.busy || self.status_busy().await != Some(false) {
            return None;
        }
        self.busy = false;
        if let Ok(messages) = self.shared.client.messages(&self.shared.session).await {
            self.catch_up(&messages);
        }
        Some(End::Idle)
    }

    /// The final answer and error of a turn whose events were missed.
    fn catch_up(&mut self, messages: &Value) {
        let Some(last) = messages.as_array().and_then(|m| {
            m.iter()
                .rev()
                .find(|m| m.pointer("/info/role").and_then(Value::as_str) == Some("assistant"))
        }) else {
            return;
        };
        if let Some(error) = last.pointer("/info/error") {
            let name = error.get("name").and_then(Value::as_str).unwrap_or("Error");
            let message = error
                .pointer("/data/message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            if name != "MessageAbortedError" {
                self.error = Some(format!("{name}: {message}"));
            }
        }
        let text: Vec<&str> = last
            .get("parts")
            .and_then(Value::as_array)
            .map(|parts| {
                parts
                    .iter()
                    .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if !text.is_empty() {
            self.answer = Some(text.join("\n"));
        }
    }

    async fn finish(self, end: End) {
        let Driver {
            shared,
            delete_session,
            settings,
            tx,
            answer,
            error,
            ..
        } = self;
        let cancelled = *shared.cancelled.borrow();
        let client = &shared.client;
        let session = &shared.session;
        if !shared.pending().is_empty() {
            // A request left open would keep OpenCode waiting on a session nobody follows.
            let _ = client.abort(session).await;
        }
        // A session kept for a continuation goes anyway when the run failed: it will not be
        // continued.
        let succeeded = !cancelled && matches!(end, End::Idle) && error.is_none();
        if (delete_session || (settings.delete_sessions && !succeeded))
            && let Err(e) = client.delete_session(session).await
        {
            tracing::debug!(error = %e, "could not delete the OpenCode session");
        }
        let (success, error) = match (cancelled, end, error) {
            (true, _, _) => (false, Some("cancelled".to_owned())),
            (false, End::Failed(reason), _) => (false, Some(reason)),
            (false, End::Idle, Some(error)) => (false, Some(error)),
            (false, End::Idle, None) => (true, None),
        };
        let _ = tx
            .send(RunEvent::Finished(RunOutcome {
                success,
                exit: None,
                error,
                output: answer,
                // Handoff's own baseline snapshot gives every executor's diff.
                diff: None,
                // The shared server has no cgroup of the task's.
                limit_reached: None,
            }))
            .await;
        shared.done.send_replace(true);
    }
}
