//! What one HTTP connection is doing, and when it has waited too long. Held in memory for the
//! connection's life only.

use std::{
    io,
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard},
    task::{Context, Poll},
    time::Duration,
};

use axum::body::{Body, Bytes, HttpBody};
use hyper::body::{Frame, SizeHint};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    sync::Notify,
    time::Instant,
};

/// How long a connection may wait in each state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// A request line and headers must arrive within this: from the accept for the first
    /// request, from its first byte for a later one.
    pub(crate) header: Duration,
    /// No request in flight after one was served; also how long a write may wait for the peer
    /// to read.
    pub(crate) keep_alive: Duration,
}

#[derive(Debug)]
struct State {
    /// Requests whose response has not been handed over in full (an SSE stream stays in flight).
    in_flight: usize,
    /// Since when nothing has been in flight (the accept time at first).
    idle_since: Instant,
    /// Whether a request has been served on this connection.
    served: bool,
    /// When the first byte of the next request arrived on a kept-alive connection.
    next_request_at: Option<Instant>,
    /// Since when a write has waited for the peer to read.
    write_blocked_since: Option<Instant>,
}

impl State {
    /// When the connection should be closed, if nothing changes first; `None`: never.
    fn deadline(&self, timeouts: Timeouts) -> Option<Instant> {
        let stalled_write = self.write_blocked_since.map(|at| at + timeouts.keep_alive);
        let waiting = if self.in_flight > 0 {
            // Body reads have their own deadline; a long response or stream is not idle.
            None
        } else if !self.served {
            Some(self.idle_since + timeouts.header)
        } else if let Some(at) = self.next_request_at {
            Some(at + timeouts.header)
        } else {
            Some(self.idle_since + timeouts.keep_alive)
        };
        match (stalled_write, waiting) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// One connection's activity, shared by its IO, its requests and its watcher.
#[derive(Debug)]
pub(crate) struct Activity {
    state: Mutex<State>,
    /// Wakes the watcher when the deadline may have moved (a single waiter: permits are kept).
    changed: Notify,
}

/// A request in flight; dropping it (with the response body) ends it.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
            state.served = true;
            state.next_request_at = None;
        }
        drop(state);
        self.0.changed.notify_one();
    }
}

impl Activity {
    /// A connection accepted now.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                in_flight: 0,
                idle_since: Instant::now(),
                served: false,
                next_request_at: None,
                write_blocked_since: None,
            }),
            changed: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request's headers have arrived.
    pub(crate) fn request_started(self: &Arc<Self>) -> InFlight {
        self.lock().in_flight += 1;
        self.changed.notify_one();
        InFlight(self.clone())
    }

    fn bytes_read(&self) {
        let mut state = self.lock();
        if state.in_flight == 0 && state.served && state.next_request_at.is_none() {
            state.next_request_at = Some(Instant::now());
            drop(state);
            self.changed.notify_one();
        }
    }

    fn write_pending(&self, pending: bool) {
        let mut state = self.lock();
        match (pending, state.write_blocked_since) {
            (true, None) => {
                state.write_blocked_since = Some(Instant::now());
                drop(state);
                self.changed.notify_one();
            }
            // A later deadline needs no wake-up: the watcher re-reads the state when it fires.
            (false, Some(_)) => state.write_blocked_since = None,
            _ => {}
        }
    }

    /// Finishes when the connection has waited past its deadline.
    pub(crate) async fn expired(&self, timeouts: Timeouts) {
        loop {
            let deadline = self.lock().deadline(timeouts);
            match deadline {
                None => self.changed.notified().await,
                Some(at) if at <= Instant::now() => return,
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = self.changed.notified() => {}
                    }
                }
            }
        }
    }
}

/// A response body that keeps its request in flight until hyper drops it (sent in full, or
/// the connection gone). Sizes pass through, so a sized body keeps its `content-length`.
#[derive(Debug)]
pub(crate) struct InFlightBody {
    inner: Body,
    _in_flight: InFlight,
}

impl InFlightBody {
    /// Ties `inner` to `in_flight`.
    pub(crate) fn new(inner: Body, in_flight: InFlight) -> Self {
        Self {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl HttpBody for InFlightBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A socket that reports reads and stalled writes to its connection's [`Activity`].
#[derive(Debug)]
pub(crate) struct Tracked<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T> Tracked<T> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: T, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }

    fn note_write<R>(&self, poll: &Poll<R>) {
        self.activity.write_pending(poll.is_pending());
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Tracked<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_read();
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tracked<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note_write(&poll);
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note_write(&poll);
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.note_write(&poll);
        poll
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timeouts = Timeouts {
        header: Duration::from_secs(10),
        keep_alive: Duration::from_secs(60),
    };

    fn state(at: Instant) -> State {
        State {
            in_flight: 0,
            idle_since: at,
            served: false,
            next_request_at: None,
            write_blocked_since: None,
        }
    }

    #[test]
    fn a_new_connection_gets_the_header_timeout() {
        let at = Instant::now();
        assert_eq!(state(at).deadline(T), Some(at + T.header));
    }

    #[test]
    fn between_requests_the_keep_alive_timeout_then_the_header_timeout() {
        let at = Instant::now();
        let mut s = state(at);
        s.served = true;
        assert_eq!(s.deadline(T), Some(at + T.keep_alive));
        let byte = at + Duration::from_secs(5);
        s.next_request_at = Some(byte);
        assert_eq!(s.deadline(T), Some(byte + T.header));
    }

    #[test]
    fn a_request_in_flight_never_expires_unless_its_writes_stall() {
        let at = Instant::now();
        let mut s = state(at);
        s.in_flight = 1;
        assert_eq!(s.deadline(T), None);
        s.write_blocked_since = Some(at);
        assert_eq!(s.deadline(T), Some(at + T.keep_alive));
    }
}
