//! Legacy MCP sessions, bounded: at most so many per caller and in total — a new one past a
//! limit takes the place of the caller's own least recently active session, or of one quiet
//! for the unused timeout ([`Book::room`]) — each owned by the caller that opened it, and a
//! session that made no request after `initialize` ends after
//! `server.unused_session_timeout_secs` instead of the idle timeout. The idle timeout is kept here too, not in rmcp's session worker: some
//! requests are answered without reaching the worker (see [`super::direct`]), so only this
//! book sees every use. Everything here lives in memory; sessions die with the process.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex, MutexGuard, Weak, atomic::AtomicBool, atomic::Ordering},
    time::{Duration, Instant},
};

use futures::Stream;
use handoff_config::ServerConfig;
use prometheus_client::metrics::{counter::Counter, gauge::Gauge};
use rmcp::{
    model::{ClientJsonRpcMessage, JsonRpcResponse, ServerJsonRpcMessage, ServerResult},
    transport::{
        WorkerTransport,
        streamable_http_server::session::{
            ServerSseMessage, SessionId, SessionManager,
            local::{LocalSessionManager, LocalSessionManagerError, LocalSessionWorker},
        },
    },
};

use crate::edge::CallerIdentity;

/// Whom an open session counts against: the identity the edge established. On the default
/// loopback bind every client shares one peer address, so the address would be no key at all.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    /// An operator token, by its name.
    Operator(String),
    /// A token-bound agent, or the `x-agent-id` of a gateway token or an open server.
    Agent(String),
    /// Callers that name no one share one count.
    Anonymous,
}

impl ClientKey {
    /// The key of a caller as the edge decided it.
    pub(crate) fn of(identity: Option<&CallerIdentity>) -> Self {
        match identity {
            Some(CallerIdentity {
                agent: Some(name),
                operator: true,
            }) => ClientKey::Operator(name.as_str().to_owned()),
            Some(CallerIdentity {
                agent: Some(agent), ..
            }) => ClientKey::Agent(agent.as_str().to_owned()),
            _ => ClientKey::Anonymous,
        }
    }
}

/// The bounds on open sessions, from `server.*`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionLimits {
    /// All callers together.
    pub(crate) total: usize,
    /// One caller.
    pub(crate) per_client: usize,
    /// A session without a request after `initialize` ends after this.
    pub(crate) unused_timeout: Duration,
    /// A session that hears nothing and sends nothing for this long ends.
    pub(crate) idle_timeout: Duration,
}

impl SessionLimits {
    /// The limits `server.*` configures.
    pub(crate) fn from_config(server: &ServerConfig) -> Self {
        Self {
            total: usize::try_from(server.max_sessions).unwrap_or(usize::MAX),
            per_client: usize::try_from(server.max_sessions_per_client).unwrap_or(usize::MAX),
            unused_timeout: server.unused_session_timeout,
            idle_timeout: server.session_idle_timeout,
        }
    }
}

/// Why a new session was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// The caller holds its share.
    #[error(
        "this caller's {limit} MCP sessions, the most allowed \
         (server.max_sessions_per_client), are all still being opened; try again shortly"
    )]
    PerClient {
        /// The limit.
        limit: usize,
    },
    /// The server holds all it may.
    #[error(
        "the server already has {limit} open MCP sessions, the most allowed \
         (server.max_sessions), and none has been quiet long enough to be ended; try again \
         after the Retry-After seconds"
    )]
    Total {
        /// The limit.
        limit: usize,
    },
}

/// What it takes to fit one more session.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Room {
    /// A place is free.
    Free,
    /// Ending this session frees one.
    Displace(SessionId),
    /// None can be freed now; one may be after `retry_after`.
    Full {
        refusal: Refusal,
        retry_after: Duration,
    },
}

/// A refused `initialize`: why, and when a place may be free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoRoom {
    /// Which limit is reached.
    pub(crate) refusal: Refusal,
    /// The soonest a place can free itself.
    pub(crate) retry_after: Duration,
}

/// A session operation that failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// rmcp's session store failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// The session would exceed a limit.
    #[error(transparent)]
    Full(#[from] Refusal),
}

#[derive(Debug)]
struct Entry {
    client: ClientKey,
    opened: Instant,
    /// Whether the client sent a request or opened a stream after `initialize`.
    used: bool,
    /// The protocol revision `initialize` settled on.
    protocol: Option<String>,
    /// Whether the client sent `notifications/initialized`.
    initialized: bool,
    /// The last request or message either side sent in this session.
    last_active: Instant,
}

impl Entry {
    /// Whether the sweeper should end this session now.
    fn expired(&self, limits: SessionLimits) -> bool {
        (!self.used && self.opened.elapsed() >= limits.unused_timeout)
            || self.last_active.elapsed() >= limits.idle_timeout
    }
}

/// Who holds how many sessions; counts include sessions being created.
#[derive(Debug, Default)]
struct Book {
    sessions: HashMap<SessionId, Entry>,
    per_client: HashMap<ClientKey, usize>,
    open: usize,
}

impl Book {
    fn admits(&self, client: &ClientKey, limits: SessionLimits) -> Result<(), Refusal> {
        if self.per_client.get(client).copied().unwrap_or(0) >= limits.per_client {
            return Err(Refusal::PerClient {
                limit: limits.per_client,
            });
        }
        if self.open >= limits.total {
            return Err(Refusal::Total {
                limit: limits.total,
            });
        }
        Ok(())
    }

    /// What a new session of `client` needs: a free place, or the session whose end makes
    /// one. At its own limit a caller's least recently active session makes way (it is the
    /// caller's own); at the server's limit, the least recently active of all, once it has
    /// been quiet for the unused timeout — never a session in use, whoever asks.
    fn room(&self, client: &ClientKey, limits: SessionLimits) -> Room {
        let Err(refusal) = self.admits(client, limits) else {
            return Room::Free;
        };
        let quiet_enough = |entry: &Entry| match refusal {
            Refusal::PerClient { .. } => &entry.client == client,
            Refusal::Total { .. } => true,
        };
        let least_recent = self
            .sessions
            .iter()
            .filter(|(_, entry)| quiet_enough(entry))
            .min_by_key(|(_, entry)| entry.last_active);
        // Only places still being created are missing from the book; they are made at once.
        let soon = Duration::from_secs(1);
        match (least_recent, &refusal) {
            (Some((id, _)), Refusal::PerClient { .. }) => Room::Displace(id.clone()),
            (Some((id, entry)), Refusal::Total { .. }) => {
                let quiet = entry.last_active.elapsed();
                match limits.unused_timeout.checked_sub(quiet) {
                    Some(left) if !left.is_zero() => Room::Full {
                        refusal,
                        retry_after: left,
                    },
                    _ => Room::Displace(id.clone()),
                }
            }
            (None, _) => Room::Full {
                refusal,
                retry_after: soon,
            },
        }
    }

    fn reserve(&mut self, client: &ClientKey) {
        *self.per_client.entry(client.clone()).or_default() += 1;
        self.open += 1;
    }

    fn release(&mut self, client: &ClientKey) {
        if let Some(count) = self.per_client.get_mut(client) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_client.remove(client);
            }
        }
        self.open = self.open.saturating_sub(1);
    }
}

/// The caller whose `initialize` is being served, and the refusal `create_session` reports.
#[derive(Debug)]
struct Admission {
    client: ClientKey,
    refusal: Mutex<Option<Refusal>>,
}

tokio::task_local! {
    // rmcp creates the session inside the request's own task, but its `create_session` takes
    // no request: the gate hands the caller over this way.
    static ADMISSION: Arc<Admission>;
}

/// What `/metrics` shows of the sessions.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionMetrics {
    /// Legacy sessions open now.
    pub(crate) open: Gauge,
    /// Sessions ended to make room for a new one.
    pub(crate) displaced: Counter,
}

/// rmcp's in-memory session manager inside Handoff's limits.
#[derive(Debug)]
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    book: Mutex<Book>,
    limits: SessionLimits,
    this: Weak<CappedSessions>,
    sweeping: AtomicBool,
    /// Refused `initialize` calls, for the log.
    refusals: Throttled,
    /// Requests naming another caller's session, for the log.
    foreign_uses: Throttled,
    metrics: SessionMetrics,
}

/// A count that is logged at most once per [`WARN_INTERVAL`]: a client hammering the server
/// must not flood the log.
#[derive(Debug, Default)]
struct Throttled(Mutex<(u64, Option<Instant>)>);

impl Throttled {
    /// Counts one; the count to log since the last time, when a warning is due.
    fn note(&self) -> Option<u64> {
        let mut state = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.0 += 1;
        if state.1.is_some_and(|at| at.elapsed() < WARN_INTERVAL) {
            return None;
        }
        state.1 = Some(Instant::now());
        Some(std::mem::take(&mut state.0))
    }
}

/// How often a [`Throttled`] count is logged at most.
const WARN_INTERVAL: Duration = Duration::from_secs(60);

impl CappedSessions {
    /// Wraps `inner`, whose own idle timeout still ends used sessions.
    pub(crate) fn new(
        inner: LocalSessionManager,
        limits: SessionLimits,
        metrics: SessionMetrics,
    ) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            inner,
            book: Mutex::new(Book::default()),
            limits,
            this: this.clone(),
            sweeping: AtomicBool::new(false),
            refusals: Throttled::default(),
            foreign_uses: Throttled::default(),
            metrics,
        })
    }

    /// Counts a refused `initialize`; warns at most once per [`WARN_INTERVAL`].
    pub(crate) fn note_refusal(&self, refusal: &Refusal) {
        if let Some(refused) = self.refusals.note() {
            tracing::warn!(refused, reason = %refusal, "refusing new MCP sessions");
        }
    }

    /// Counts a request that named a session another caller opened; warns at most once per
    /// [`WARN_INTERVAL`].
    pub(crate) fn note_foreign_use(&self) {
        if let Some(requests) = self.foreign_uses.note() {
            tracing::warn!(
                requests,
                "answered requests naming another caller's MCP session as unknown"
            );
        }
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        // The book holds counts only; a panic elsewhere leaves them consistent enough to go on.
        self.book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes a place for one more session of `client`, ending the session [`Book::room`]
    /// picks; refused when none can be freed now.
    pub(crate) async fn make_room(&self, client: &ClientKey) -> Result<(), NoRoom> {
        // Each round frees one place; others racing for it may take it, so a few rounds.
        for _ in 0..4 {
            let room = self.book().room(client, self.limits);
            match room {
                Room::Free => return Ok(()),
                Room::Displace(id) => {
                    self.metrics.displaced.inc();
                    tracing::info!(
                        session = %id,
                        "ending the least recently active MCP session to make room for a new one"
                    );
                    if let Err(error) = self.close_session(&id).await {
                        tracing::debug!(session = %id, %error, "could not end a session");
                    }
                }
                Room::Full {
                    refusal,
                    retry_after,
                } => {
                    return Err(NoRoom {
                        refusal,
                        retry_after,
                    });
                }
            }
        }
        Err(NoRoom {
            refusal: Refusal::Total {
                limit: self.limits.total,
            },
            retry_after: Duration::from_secs(1),
        })
    }

    /// Whether session `id` is open and was opened by someone other than `client`.
    pub(crate) fn opened_by_another(&self, id: &str, client: &ClientKey) -> bool {
        self.book()
            .sessions
            .get(id)
            .is_some_and(|entry| &entry.client != client)
    }

    /// Runs `serve` (the `initialize` request) on behalf of `client`; the refusal is set when
    /// a racing `initialize` took the last place after [`Self::check`].
    pub(crate) async fn admitted<F: Future>(
        &self,
        client: ClientKey,
        serve: F,
    ) -> (F::Output, Option<Refusal>) {
        let admission = Arc::new(Admission {
            client,
            refusal: Mutex::new(None),
        });
        let output = ADMISSION.scope(admission.clone(), serve).await;
        let refusal = admission
            .refusal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        (output, refusal)
    }

    /// Whether a session is open.
    pub(crate) fn is_open(&self, id: &str) -> bool {
        self.book().sessions.contains_key(id)
    }

    /// The protocol revision an open session negotiated, once its `initialize` was answered.
    pub(crate) fn negotiated(&self, id: &str) -> Option<String> {
        self.book()
            .sessions
            .get(id)
            .and_then(|entry| entry.protocol.clone())
    }

    /// The revision a session negotiated, once its handshake is complete (`initialize`
    /// answered and `notifications/initialized` received); `None` before, or when not open.
    pub(crate) fn ready(&self, id: &str) -> Option<String> {
        self.book()
            .sessions
            .get(id)
            .filter(|entry| entry.initialized)
            .and_then(|entry| entry.protocol.clone())
    }

    /// Records that the client finished the handshake.
    pub(crate) fn mark_initialized(&self, id: &str) {
        if let Some(entry) = self.book().sessions.get_mut(id) {
            entry.initialized = true;
            entry.last_active = Instant::now();
        }
    }

    /// Records a request or stream the client opened in the session: a use.
    pub(crate) fn mark_used(&self, id: &str) {
        if let Some(entry) = self.book().sessions.get_mut(id) {
            entry.used = true;
            entry.last_active = Instant::now();
        }
    }

    /// Records traffic that keeps a session from idling but is no use of it (a notification,
    /// a message the server sends).
    pub(crate) fn mark_active(&self, id: &str) {
        if let Some(entry) = self.book().sessions.get_mut(id) {
            entry.last_active = Instant::now();
        }
    }

    /// Starts the sweeper of unused sessions once, from inside the runtime.
    fn ensure_sweeper(&self) {
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.this.clone();
        // A quarter of the shorter timeout: a session ends between 1x and 1.25x of it.
        let shorter = self.limits.unused_timeout.min(self.limits.idle_timeout);
        let period = (shorter / 4).max(Duration::from_millis(50));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(sessions) = this.upgrade() else {
                    return;
                };
                sessions.close_expired().await;
            }
        });
    }

    /// Ends every session that made no request within the unused timeout.
    async fn close_expired(&self) {
        let expired: Vec<SessionId> = self
            .book()
            .sessions
            .iter()
            .filter(|(_, e)| e.expired(self.limits))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            if let Err(error) = self.close_session(id).await {
                tracing::debug!(session = %id, %error, "could not close an expired session");
            }
        }
        if !expired.is_empty() {
            tracing::debug!(
                closed = expired.len(),
                "closed MCP sessions unused after initialize or idle"
            );
        }
    }

    fn refuse(&self, refusal: Refusal) -> SessionsError {
        // Only a race past the gate's check lands here; the gate answers it.
        let _ = ADMISSION.try_with(|a| {
            *a.refusal
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(refusal.clone());
        });
        SessionsError::Full(refusal)
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.ensure_sweeper();
        let client = ADMISSION
            .try_with(|a| a.client.clone())
            .unwrap_or(ClientKey::Anonymous);
        {
            let mut book = self.book();
            if let Err(refusal) = book.admits(&client, self.limits) {
                drop(book);
                return Err(self.refuse(refusal));
            }
            book.reserve(&client);
        }
        match self.inner.create_session().await {
            Ok((id, transport)) => {
                let now = Instant::now();
                let entry = Entry {
                    client,
                    opened: now,
                    used: false,
                    protocol: None,
                    initialized: false,
                    last_active: now,
                };
                let open = {
                    let mut book = self.book();
                    book.sessions.insert(id.clone(), entry);
                    book.sessions.len()
                };
                self.metrics
                    .open
                    .set(i64::try_from(open).unwrap_or(i64::MAX));
                Ok((id, transport))
            }
            Err(error) => {
                self.book().release(&client);
                Err(error.into())
            }
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answer = self.inner.initialize_session(id, message).await?;
        if let ServerJsonRpcMessage::Response(JsonRpcResponse {
            result: ServerResult::InitializeResult(init),
            ..
        }) = &answer
            && let Some(entry) = self.book().sessions.get_mut(id)
        {
            entry.protocol = Some(init.protocol_version.as_str().to_owned());
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // rmcp closes again when the worker ends; only the first close counts.
        let removed = {
            let mut book = self.book();
            let entry = book.sessions.remove(id);
            if let Some(entry) = &entry {
                book.release(&entry.client);
            }
            let open = book.sessions.len();
            drop(book);
            self.metrics
                .open
                .set(i64::try_from(open).unwrap_or(i64::MAX));
            entry
        };
        if removed.is_some() {
            tracing::debug!(session = %id, "MCP session closed");
        }
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.mark_used(id);
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        // `notifications/initialized` is part of the handshake, not a use.
        self.mark_active(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.mark_used(id);
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.mark_used(id);
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_client: usize) -> SessionLimits {
        SessionLimits {
            total,
            per_client,
            unused_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(1800),
        }
    }

    #[test]
    fn the_book_refuses_past_each_limit_and_frees_on_release() {
        let (a, b) = (ClientKey::Agent("a".into()), ClientKey::Agent("b".into()));
        let mut book = Book::default();
        book.reserve(&a);
        book.reserve(&a);
        assert_eq!(
            book.admits(&a, limits(10, 2)),
            Err(Refusal::PerClient { limit: 2 })
        );
        assert_eq!(book.admits(&b, limits(10, 2)), Ok(()));
        assert_eq!(
            book.admits(&b, limits(2, 5)),
            Err(Refusal::Total { limit: 2 })
        );
        book.release(&a);
        assert_eq!(book.admits(&a, limits(10, 2)), Ok(()));
        book.release(&a);
        assert!(book.per_client.is_empty(), "no empty counts are kept");
        assert_eq!(book.open, 0);
    }

    #[test]
    fn room_is_made_from_the_callers_own_or_a_long_quiet_session() {
        let (a, b) = (ClientKey::Agent("a".into()), ClientKey::Agent("b".into()));
        let now = Instant::now();
        let mut book = Book::default();
        let mut open = |id: &str, client: &ClientKey, quiet_secs: u64| {
            book.reserve(client);
            let last_active = now - Duration::from_secs(quiet_secs);
            let entry = Entry {
                client: client.clone(),
                opened: last_active,
                used: true,
                protocol: None,
                initialized: true,
                last_active,
            };
            book.sessions.insert(SessionId::from(id), entry);
        };
        open("b-old", &b, 100);
        open("a-old", &a, 20);
        open("a-new", &a, 1);
        // The caller's own least recent session, not an older one of someone else.
        assert_eq!(
            book.room(&a, limits(10, 2)),
            Room::Displace(SessionId::from("a-old"))
        );
        assert_eq!(book.room(&b, limits(10, 2)), Room::Free);
        // The server's limit: the least recent of all, once quiet for the unused timeout.
        assert_eq!(
            book.room(&b, limits(3, 5)),
            Room::Displace(SessionId::from("b-old"))
        );
        book.sessions.remove("b-old");
        match book.room(&b, limits(3, 5)) {
            Room::Full {
                refusal: Refusal::Total { limit: 3 },
                retry_after,
            } => assert!(
                retry_after > Duration::from_secs(9) && retry_after <= Duration::from_secs(10),
                "a-old has been quiet 20 s of 30: {retry_after:?}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn places_still_being_created_cannot_be_displaced() {
        let a = ClientKey::Agent("a".into());
        let mut book = Book::default();
        book.reserve(&a);
        assert_eq!(
            book.room(&a, limits(10, 1)),
            Room::Full {
                refusal: Refusal::PerClient { limit: 1 },
                retry_after: Duration::from_secs(1),
            }
        );
    }

    #[test]
    fn a_session_expires_unused_or_idle_but_not_while_heard_from() {
        let limits = limits(10, 10);
        let long_ago = Instant::now() - Duration::from_secs(3600);
        let entry = |used, last_active| Entry {
            client: ClientKey::Anonymous,
            opened: long_ago,
            used,
            protocol: None,
            initialized: true,
            last_active,
        };
        assert!(entry(false, Instant::now()).expired(limits), "never used");
        assert!(entry(true, long_ago).expired(limits), "idle");
        assert!(!entry(true, Instant::now()).expired(limits), "in use");
    }

    #[test]
    fn identities_key_their_own_counts() {
        let agent = handoff_tools::AgentId::parse("alice").unwrap();
        let as_agent = CallerIdentity {
            agent: Some(agent.clone()),
            operator: false,
        };
        let as_operator = CallerIdentity {
            agent: Some(agent),
            operator: true,
        };
        assert_eq!(
            ClientKey::of(Some(&as_agent)),
            ClientKey::Agent("alice".into())
        );
        assert_eq!(
            ClientKey::of(Some(&as_operator)),
            ClientKey::Operator("alice".into())
        );
        assert_eq!(ClientKey::of(None), ClientKey::Anonymous);
        assert_eq!(
            ClientKey::of(Some(&CallerIdentity::default())),
            ClientKey::Anonymous
        );
    }
}
