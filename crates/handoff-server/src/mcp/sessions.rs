//! Legacy MCP sessions, bounded: at most so many per caller and in total, and a session that
//! made no request after `initialize` ends after `server.unused_session_timeout_secs` instead
//! of the idle timeout. The idle timeout is kept here too, not in rmcp's session worker: some
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
        "this caller already has {limit} open MCP sessions, the most allowed \
         (server.max_sessions_per_client); end unused ones with DELETE or let them expire"
    )]
    PerClient {
        /// The limit.
        limit: usize,
    },
    /// The server holds all it may.
    #[error(
        "the server already has {limit} open MCP sessions, the most allowed \
         (server.max_sessions); try again later"
    )]
    Total {
        /// The limit.
        limit: usize,
    },
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

/// rmcp's in-memory session manager inside Handoff's limits.
#[derive(Debug)]
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    book: Mutex<Book>,
    limits: SessionLimits,
    this: Weak<CappedSessions>,
    sweeping: AtomicBool,
    /// Refusals since the last warning, and when that was.
    refusals: Mutex<(u64, Option<Instant>)>,
}

/// How often refusals are logged at most: a client hammering `initialize` must not flood logs.
const WARN_INTERVAL: Duration = Duration::from_secs(60);

impl CappedSessions {
    /// Wraps `inner`, whose own idle timeout still ends used sessions.
    pub(crate) fn new(inner: LocalSessionManager, limits: SessionLimits) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            inner,
            book: Mutex::new(Book::default()),
            limits,
            this: this.clone(),
            sweeping: AtomicBool::new(false),
            refusals: Mutex::new((0, None)),
        })
    }

    /// Counts a refused `initialize`; warns at most once per [`WARN_INTERVAL`].
    pub(crate) fn note_refusal(&self, refusal: &Refusal) {
        let mut refusals = self
            .refusals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        refusals.0 += 1;
        if refusals.1.is_some_and(|at| at.elapsed() < WARN_INTERVAL) {
            return;
        }
        let refused = std::mem::take(&mut refusals.0);
        refusals.1 = Some(Instant::now());
        drop(refusals);
        tracing::warn!(refused, reason = %refusal, "refusing new MCP sessions");
    }

    /// The limits in force.
    pub(crate) fn limits(&self) -> SessionLimits {
        self.limits
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        // The book holds counts only; a panic elsewhere leaves them consistent enough to go on.
        self.book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `client` may open one more session now (a quick answer before any work).
    pub(crate) fn check(&self, client: &ClientKey) -> Result<(), Refusal> {
        self.book().admits(client, self.limits)
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
                self.book().sessions.insert(id.clone(), entry);
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
