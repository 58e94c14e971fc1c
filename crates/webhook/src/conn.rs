//! One served connection: the phase it is in, the read deadline of that phase, and [`Conn`],
//! the TLS stream that enforces them.
//!
//! A connection goes through these phases ([`Phase`]):
//!
//! | phase | from | read deadline |
//! |---|---|---|
//! | `Handshake` | accept | `handshake_timeout` after accept (enforced by the listener) |
//! | `Head` | end of the handshake, or the first byte of a later request | `header_read_timeout` after that |
//! | `Body` | the request head parsed | `request_read_timeout` after the request started (head included) |
//! | `Busy` | the body read (or dropped) | none: the handler has its own deadline |
//! | `Idle` | the response handed to the connection | `idle_timeout` after that |
//!
//! The deadlines are fixed when a phase starts and are not moved by the bytes that arrive,
//! so a client trickling a byte every few seconds is closed at the same moment as a silent
//! one. This is what Go's `http.Server` does with `ReadHeaderTimeout`, `ReadTimeout` and
//! `IdleTimeout` (kube-apiserver and controller-runtime's webhook server set the first and
//! the last); hyper's own `header_read_timeout` would start on an idle keep-alive connection
//! too and so close it after the header deadline, which is why the deadlines are kept here.
//! A write that makes no progress for `idle_timeout` (a client that stopped reading) fails
//! as well. A connection is *settled* once it has sent one whole request: settled
//! connections are the last to be shed when all slots are taken (see the `slots` module).

use std::future::Future as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, oneshot};
use tokio::time::{Instant, Sleep};
use tokio_rustls::server::TlsStream;

use crate::slots::Slot;

/// Bounds on the connections the server keeps, and the deadlines of each request.
///
/// Deadlines run from the start of a request and are not extended by the bytes that trickle
/// in: the head must be complete `header_read_timeout` after the request started (after the
/// TLS handshake for the first request of a connection, after its first byte for the later
/// ones), head and body `request_read_timeout` after it. Between requests a keep-alive
/// connection may stay silent for `idle_timeout`.
///
/// All `max_connections` slots taken, a new client is not left waiting behind slow ones:
/// the connection that has gone longest without sending its first request in full (still in
/// its TLS handshake, its head or its body) and is older than `shed_grace` is closed to make
/// room, first from client addresses holding more than `pending_per_client` such
/// connections, at most `shed_rate` a second. Connections that have sent a whole request are
/// shed only when no other is left, oldest idle first; a connection whose request is being
/// handled never is.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Connections open at once, TLS handshakes included (default 1024). When all are
    /// taken a new client waits in the kernel's backlog until one closes or can be shed.
    pub max_connections: usize,
    /// Longest a TLS handshake may take (default 10 s).
    pub handshake_timeout: Duration,
    /// Longest the head of a request (request line and headers) may take to arrive, from
    /// the start of the request (default 10 s, the default `timeoutSeconds` of a webhook:
    /// the API server sends its head at once; Go servers in Kubernetes use 32 s).
    pub header_read_timeout: Duration,
    /// Longest a whole request (head and body) may take to arrive, from its start (default
    /// 30 s, the longest `timeoutSeconds` a webhook may have: past it the API server has
    /// given up on the answer).
    pub request_read_timeout: Duration,
    /// How long a keep-alive connection may stay silent between requests, and how long a
    /// response may wait for the client to read it (default 90 s, like Go's transport and
    /// kube-apiserver).
    pub idle_timeout: Duration,
    /// How long a new connection is safe from being shed, so that a client that has just
    /// been let in can finish its handshake and send its request (default 500 ms).
    pub shed_grace: Duration,
    /// Most connections shed per second, one second's worth at once (default 256; 0 never
    /// sheds). Slow clients that reconnect when shed are shed again in turn: this bounds the
    /// TLS handshakes they cost (each one a signature with the serving key), while a new
    /// client waits about (slow clients beyond `max_connections`) / `shed_rate` seconds.
    pub shed_rate: u32,
    /// Connections one client address may have that have not yet sent a whole request
    /// before they are the first to be shed (default 64).
    pub pending_per_client: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            request_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(90),
            shed_grace: Duration::from_millis(500),
            shed_rate: 256,
            pending_per_client: 64,
        }
    }
}

/// Where a connection is in its life; see the module docs for the deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Accepted, TLS handshake under way.
    Handshake,
    /// Reading a request head.
    Head,
    /// Reading a request body.
    Body,
    /// The request read; the handler runs or the response is being written.
    Busy,
    /// Waiting for the next request on a keep-alive connection.
    Idle,
}

impl Phase {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Phase::Handshake => "handshake",
            Phase::Head => "head",
            Phase::Body => "body",
            Phase::Busy => "busy",
            Phase::Idle => "idle",
        }
    }
}

/// A snapshot of a connection's [`Track`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct State {
    pub(crate) phase: Phase,
    /// When the phase's clock started: accept for `Handshake`, the start of the request for
    /// `Head` and `Body`, the end of the last response for `Idle`.
    pub(crate) since: Instant,
    /// When the connection was accepted.
    pub(crate) opened: Instant,
    /// Whether the connection has sent one whole request.
    pub(crate) settled: bool,
}

impl State {
    /// The instant reads must be done by in this phase, if any.
    pub(crate) fn read_deadline(&self, limits: &ConnectionLimits) -> Option<(Instant, Duration)> {
        let limit = match self.phase {
            Phase::Handshake => {
                return Some((self.opened + limits.handshake_timeout, limits.handshake_timeout));
            }
            Phase::Head => limits.header_read_timeout.min(limits.request_read_timeout),
            Phase::Body => limits.request_read_timeout,
            Phase::Busy => return None,
            Phase::Idle => limits.idle_timeout,
        };
        Some((self.since + limit, limit))
    }
}

/// The phase of one connection, shared by its I/O ([`Conn`]), the HTTP service serving it,
/// and the slot table deciding what to shed.
#[derive(Debug)]
pub(crate) struct Track {
    inner: Mutex<Inner>,
    /// Told when the connection may have become sheddable (the slot table waits on it).
    changed: Arc<Notify>,
}

#[derive(Debug)]
struct Inner {
    state: State,
    /// The reader that found nothing while `Busy`, when no deadline was armed: hyper does
    /// not read again after the response unless woken, so the idle deadline needs it.
    parked: Option<Waker>,
}

impl Track {
    pub(crate) fn new(now: Instant, changed: Arc<Notify>) -> Self {
        let state = State { phase: Phase::Handshake, since: now, opened: now, settled: false };
        Self { inner: Mutex::new(Inner { state, parked: None }), changed }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self) -> State {
        self.lock().state
    }

    fn update(&self, f: impl FnOnce(&mut State) -> bool) {
        let notify = f(&mut self.lock().state);
        if notify {
            self.changed.notify_one();
        }
    }

    /// Wake `waker` when the connection next turns idle (its read deadline starts then), or
    /// at once if it no longer is `Busy` (the phase changed since the reader looked).
    fn park(&self, waker: &Waker) {
        let mut inner = self.lock();
        if inner.state.phase != Phase::Busy {
            drop(inner);
            waker.wake_by_ref();
        } else if !inner.parked.as_ref().is_some_and(|w| w.will_wake(waker)) {
            inner.parked = Some(waker.clone());
        }
    }

    /// The TLS handshake is done: the first request's head is due.
    pub(crate) fn handshake_done(&self) {
        self.update(|s| {
            if s.phase == Phase::Handshake {
                s.phase = Phase::Head;
                s.since = Instant::now();
            }
            false
        });
    }

    /// Bytes arrived: on an idle connection, they start the next request.
    pub(crate) fn bytes_read(&self) {
        self.update(|s| {
            if s.phase == Phase::Idle {
                s.phase = Phase::Head;
                s.since = Instant::now();
            }
            false
        });
    }

    /// A request head was parsed (the service is called).
    pub(crate) fn head_received(&self) {
        self.update(|s| {
            match s.phase {
                Phase::Head => s.phase = Phase::Body,
                // A pipelined request buffered before the previous response ended.
                Phase::Idle | Phase::Busy | Phase::Handshake => {
                    s.phase = Phase::Body;
                    s.since = Instant::now();
                }
                Phase::Body => {}
            }
            false
        });
    }

    /// The request body was read to its end, or dropped unread.
    pub(crate) fn body_done(&self) {
        self.update(|s| {
            if s.phase != Phase::Body {
                return false;
            }
            s.phase = Phase::Busy;
            let first = !s.settled;
            s.settled = true;
            first
        });
    }

    /// The response was handed to the connection (or dropped): the connection is idle.
    pub(crate) fn response_done(&self) {
        let parked = {
            let mut inner = self.lock();
            inner.state.phase = Phase::Idle;
            inner.state.since = Instant::now();
            inner.state.settled = true;
            inner.parked.take()
        };
        self.changed.notify_one();
        if let Some(reader) = parked {
            reader.wake();
        }
    }
}

/// Why a [`Conn`] stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnError {
    /// A read deadline passed.
    #[error("no {what} within {limit:?}")]
    Deadline {
        /// What was late ("request head", "request body", "request after the last one").
        what: &'static str,
        /// The deadline.
        limit: Duration,
    },
    /// A write made no progress: the client does not read.
    #[error("the client read nothing for {limit:?}")]
    WriteStalled {
        /// The deadline.
        limit: Duration,
    },
    /// The slot table closed the connection to admit another.
    #[error("shed to make room for a new connection")]
    Shed,
}

impl ConnError {
    fn io(self) -> std::io::Error {
        let kind = match self {
            ConnError::Deadline { .. } | ConnError::WriteStalled { .. } => std::io::ErrorKind::TimedOut,
            ConnError::Shed => std::io::ErrorKind::ConnectionAborted,
        };
        std::io::Error::new(kind, self)
    }
}

/// A served connection: TLS, holding one slot, failing its reads past the deadline of its
/// phase, its stalled writes after `idle_timeout`, and everything once it is shed.
pub(crate) struct Conn {
    io: TlsStream<TcpStream>,
    peer: SocketAddr,
    limits: ConnectionLimits,
    track: Arc<Track>,
    /// Resolves when the slot table sheds the connection; `None` once it has.
    shed: Option<oneshot::Receiver<()>>,
    read_timer: Pin<Box<Sleep>>,
    write_timer: Pin<Box<Sleep>>,
    write_stalled: bool,
    _slot: Slot,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("peer", &self.peer)
            .field("state", &self.track.get())
            .finish_non_exhaustive()
    }
}

impl Conn {
    pub(crate) fn new(
        io: TlsStream<TcpStream>,
        peer: SocketAddr,
        limits: ConnectionLimits,
        track: Arc<Track>,
        shed: oneshot::Receiver<()>,
        slot: Slot,
    ) -> Self {
        let now = Instant::now();
        Self {
            io,
            peer,
            limits,
            track,
            shed: Some(shed),
            read_timer: Box::pin(tokio::time::sleep_until(now)),
            write_timer: Box::pin(tokio::time::sleep_until(now)),
            write_stalled: false,
            _slot: slot,
        }
    }

    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub(crate) fn track(&self) -> &Arc<Track> {
        &self.track
    }

    /// Whether the connection has been shed (registers the waker when not).
    fn poll_shed(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(rx) = self.shed.as_mut() else { return true };
        if Pin::new(rx).poll(cx).is_ready() {
            self.shed = None;
            tracing::debug!(peer = %self.peer, phase = self.track.get().phase.as_str(), "connection shed");
            return true;
        }
        false
    }

    fn late(&self, state: &State, limit: Duration) -> std::io::Error {
        let what = match state.phase {
            Phase::Handshake | Phase::Head => "request head",
            Phase::Body => "whole request",
            Phase::Busy | Phase::Idle => "request after the last one",
        };
        tracing::debug!(peer = %self.peer, phase = state.phase.as_str(),
            limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX), "closing a connection past its read deadline");
        ConnError::Deadline { what, limit }.io()
    }

    /// Passes `result` on, failing a write that has been pending for `idle_timeout`.
    fn write_progress<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if result.is_ready() {
            self.write_stalled = false;
            return result;
        }
        if !self.write_stalled {
            self.write_stalled = true;
            self.write_timer.as_mut().reset(Instant::now() + self.limits.idle_timeout);
        }
        if self.write_timer.as_mut().poll(cx).is_ready() {
            tracing::debug!(peer = %self.peer, "closing a connection whose client does not read");
            return Poll::Ready(Err(ConnError::WriteStalled { limit: self.limits.idle_timeout }.io()));
        }
        Poll::Pending
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.poll_shed(cx) {
            return Poll::Ready(Err(ConnError::Shed.io()));
        }
        let state = this.track.get();
        let deadline = state.read_deadline(&this.limits);
        if let Some((at, limit)) = deadline
            && Instant::now() >= at
        {
            return Poll::Ready(Err(this.late(&state, limit)));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.track.bytes_read();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                let Some((at, limit)) = deadline else {
                    this.track.park(cx.waker());
                    return Poll::Pending;
                };
                if this.read_timer.deadline() != at {
                    this.read_timer.as_mut().reset(at);
                }
                if this.read_timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(this.late(&state, limit)));
                }
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.poll_shed(cx) {
            return Poll::Ready(Err(ConnError::Shed.io()));
        }
        let result = Pin::new(&mut this.io).poll_write(cx, buf);
        this.write_progress(cx, result)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.poll_shed(cx) {
            return Poll::Ready(Err(ConnError::Shed.io()));
        }
        let result = Pin::new(&mut this.io).poll_flush(cx);
        this.write_progress(cx, result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let result = Pin::new(&mut this.io).poll_shutdown(cx);
        this.write_progress(cx, result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.poll_shed(cx) {
            return Poll::Ready(Err(ConnError::Shed.io()));
        }
        let result = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.write_progress(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn deadlines_follow_the_phase_not_the_bytes() {
        let limits = ConnectionLimits::default();
        let track = Track::new(Instant::now(), Arc::new(Notify::new()));
        track.handshake_done();
        let head = track.get();
        assert_eq!(head.phase, Phase::Head);
        assert_eq!(
            head.read_deadline(&limits),
            Some((head.since + limits.header_read_timeout, limits.header_read_timeout))
        );
        // Bytes of the head do not move its deadline.
        track.bytes_read();
        assert_eq!(track.get().since, head.since);
        track.head_received();
        let body = track.get();
        assert_eq!((body.phase, body.since), (Phase::Body, head.since));
        assert_eq!(body.read_deadline(&limits).map(|d| d.0), Some(head.since + limits.request_read_timeout));
        assert!(!body.settled);
        track.body_done();
        assert_eq!(track.get().phase, Phase::Busy);
        assert!(track.get().settled);
        assert_eq!(track.get().read_deadline(&limits), None);
        track.response_done();
        let idle = track.get();
        assert_eq!(idle.phase, Phase::Idle);
        assert_eq!(idle.read_deadline(&limits).map(|d| d.1), Some(limits.idle_timeout));
        // The first byte of the next request starts its head deadline.
        track.bytes_read();
        assert_eq!(track.get().phase, Phase::Head);
    }
}
