//! The connection loop shared by the API and admin listeners: HTTP/1.1 and HTTP/2 (so gRPC)
//! on one port, optional TLS (its acceptor re-read per connection, so a reloaded certificate
//! applies to new connections without dropping open ones), a cap on open connections,
//! header-read and handshake timeouts, HTTP/2 keep-alive pings, a maximum connection age, and
//! a shutdown in two phases:
//!
//! 1. [`Phase::Draining`] (the shutdown delay): the listener still accepts, but every
//!    connection is asked to move: HTTP/2 gets a GOAWAY (in-flight streams finish, the client
//!    opens a new connection), HTTP/1 responses carry `Connection: close`. Clients that hold
//!    connections to this pod's IP leave it while it still answers.
//! 2. [`Phase::Stopped`]: the listener closes (the connections already in its accept queue, up
//!    to the connection cap, are taken first and served: their clients' connects had
//!    returned), idle connections close, busy ones finish their requests, all within the drain
//!    deadline.
//!
//! Deadlines and caps, each with its default in `config/default.toml`:
//! - **Header read** (`header_read_timeout_ms`, HTTP/1 and a connection's first bytes): the
//!   connection's own, not hyper's (hyper's arms a new timer for every request it reads: an
//!   allocation, a timer-wheel insert and removal, about 1,400 instructions of a `/token`
//!   request, benches/README.md). One interval per connection checks, every
//!   `header_read_timeout`, whether the connection did anything since the last check (started
//!   a request, finished a response, wrote to the socket after its first request) or is still
//!   answering one; a connection that did not is asked to close and dropped soon after. So a
//!   client that sends no complete request head (an idle keep-alive connection, a slowloris
//!   trickle, fewer than the 24 bytes of the HTTP/2 preface, which hyper-util reads with no
//!   deadline) is closed after one to two `header_read_timeout`s, in every phase of the
//!   shutdown too.
//! - **HTTP/2 idle** (`http2_idle_timeout_ms`): once a connection has carried an HTTP/2
//!   request, it is sent GOAWAY and closed when it has had no open stream for that long,
//!   whether or not its client answers pings (pings only find dead peers).
//! - **Write progress** (`write_timeout_ms`): when a response body is under way and neither a
//!   frame is handed to hyper nor response data written to the socket for that long (its
//!   client stopped reading and the buffers are full), the connection is asked to close and
//!   dropped a moment later, and with it the body and the caller's in-flight place. A body
//!   waiting for its own next frame (a gRPC health `Watch` between changes) is not held up by
//!   its client and does not count. Progress is counted per connection: on HTTP/2, a stream
//!   its client leaves unread while reading others is not cut.
//! - **Streams** (`http2_max_concurrent_streams`) and small HTTP/2 receive windows (request
//!   bodies here are at most a few KiB), and a maximum connection age.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{HeaderValue, Request, Response, Version, header};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tower::ServiceBuilder;

use crate::callers::ClientIdentity;
use crate::callers::peer::Peer;
use crate::tls::ReloadableAcceptor;

mod woken;

/// HTTP/2 keep-alive: a ping after this much silence...
const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
/// ...must be answered within this, or the connection (and its permit) is dropped: a vanished
/// peer cannot hold a connection slot, or the drain, for ever.
const H2_PING_TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP/2 receive window of one stream: the protocol's default (request bodies here are a
/// few KiB at most; hyper's default is 1 MiB).
const H2_STREAM_WINDOW: u32 = 65_535;
/// HTTP/2 receive window of a connection, all its streams together (hyper's default is 1 MiB).
const H2_CONNECTION_WINDOW: u32 = 256 * 1024;

/// Bytes one HTTP/2 stream may have queued for sending (hyper's default is 400 KiB): a
/// streamed body is asked for its next chunk only below it, so one fast stream holds at most
/// this and one chunk of the stream budget (`limits.stream_buffer_bytes`), and many streams
/// share the budget evenly.
const H2_SEND_BUFFER: usize = 64 * 1024;

/// How long a connection that has not yet sent a request is given at [`Phase::Stopped`].
const FIRST_REQUEST_GRACE: Duration = Duration::from_millis(500);

/// Where a listener is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Accepting and serving.
    Serving,
    /// Shutdown delay: still accepting, but asking every connection to move elsewhere.
    Draining,
    /// Not accepting; connections finish within the drain deadline.
    Stopped,
}

/// Connection limits and deadlines.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// Open connections at once; accepting pauses at the limit.
    pub max_connections: usize,
    /// Time to receive a request's headers (HTTP/1): a connection that neither starts a
    /// request nor sends a response for this long (up to twice as long) is closed.
    pub header_read_timeout: Duration,
    /// Time in-flight requests get once the phase is [`Phase::Stopped`].
    pub drain_timeout: Duration,
    /// Connections older than this (±10 %, so clients do not reconnect in step) are asked to
    /// close: HTTP/2 GOAWAY, HTTP/1 `Connection: close` on the next response. Those still open
    /// `drain_timeout` later are closed. `None`: never.
    pub max_connection_age: Option<Duration>,
    /// A response body that makes no progress for this long has its connection dropped.
    pub write_timeout: Duration,
    /// An HTTP/2 connection with no open stream for this long is closed.
    pub http2_idle_timeout: Duration,
    /// Streams open at once on one HTTP/2 connection.
    pub http2_max_concurrent_streams: u32,
}

impl ServeOptions {
    /// The options `[server]` configures for the API listener.
    pub fn of(s: &crate::config::ServerSettings) -> Self {
        let ms = Duration::from_millis;
        ServeOptions {
            max_connections: s.max_connections,
            header_read_timeout: ms(s.header_read_timeout_ms),
            drain_timeout: ms(s.drain_timeout_ms),
            max_connection_age: (s.max_connection_age_ms > 0).then(|| ms(s.max_connection_age_ms)),
            write_timeout: ms(s.write_timeout_ms),
            http2_idle_timeout: ms(s.http2_idle_timeout_ms),
            http2_max_concurrent_streams: s.http2_max_concurrent_streams,
        }
    }
}

/// What the request path knows about its connection.
#[derive(Debug, Default)]
struct ConnState {
    /// The connection has carried an HTTP/2 request.
    h2: AtomicBool,
    /// The connection has handed a request to the service.
    served: AtomicBool,
    /// The connection should end: HTTP/1 responses say `Connection: close`.
    closing: AtomicBool,
    /// Woken when the first HTTP/2 request arrives on a connection already closing, so it
    /// gets its GOAWAY then.
    h2_seen_late: tokio::sync::Notify,
    /// Requests started, responses finished and socket writes after the first request:
    /// unchanged between two header-read checks means the connection did nothing for a whole
    /// period.
    activity: AtomicU64,
    /// Responses not yet finished: a handler running, or a body not yet all handed to hyper.
    open: AtomicUsize,
    /// Response bodies under way (their headers sent, their ends not yet handed to hyper).
    bodies: AtomicUsize,
    /// Of those, the bodies waiting for their own next frame (a gRPC health `Watch` between
    /// changes): not held up by the client.
    waiting: AtomicUsize,
    /// Body frames handed to hyper, socket writes of data and responses finished: unchanged
    /// between two checks means no response moved (see [`Quiet`]). A new request is not
    /// progress of the responses already under way.
    progress: AtomicU64,
    /// Requests started and responses finished: unchanged between two checks means no stream
    /// opened or closed (the HTTP/2 idle deadline).
    streams: AtomicU64,
}

/// A response in progress, from its request's call to the end (or drop) of its body: counted
/// in [`ConnState::open`], and as activity when it starts and ends.
struct ResponseInProgress(Arc<ConnState>);

impl ResponseInProgress {
    fn start(state: &Arc<ConnState>) -> ResponseInProgress {
        state.open.fetch_add(1, Ordering::Relaxed);
        state.activity.fetch_add(1, Ordering::Relaxed);
        state.streams.fetch_add(1, Ordering::Relaxed);
        ResponseInProgress(state.clone())
    }
}

impl Drop for ResponseInProgress {
    fn drop(&mut self) {
        self.0.activity.fetch_add(1, Ordering::Relaxed);
        self.0.progress.fetch_add(1, Ordering::Relaxed);
        self.0.streams.fetch_add(1, Ordering::Relaxed);
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body under way, counted in [`ConnState::bodies`] (and, while it waits for its
/// own next frame, in [`ConnState::waiting`]) until dropped.
struct BodyUnderWay {
    state: Arc<ConnState>,
    waiting: bool,
}

impl BodyUnderWay {
    fn start(state: &Arc<ConnState>) -> BodyUnderWay {
        state.bodies.fetch_add(1, Ordering::Relaxed);
        BodyUnderWay { state: state.clone(), waiting: false }
    }

    /// Whether the body's last poll found its own next frame not ready.
    fn set_waiting(&mut self, waiting: bool) {
        if waiting != self.waiting {
            self.waiting = waiting;
            match waiting {
                true => self.state.waiting.fetch_add(1, Ordering::Relaxed),
                false => self.state.waiting.fetch_sub(1, Ordering::Relaxed),
            };
        }
    }
}

impl Drop for BodyUnderWay {
    fn drop(&mut self) {
        self.set_waiting(false);
        self.state.bodies.fetch_sub(1, Ordering::Relaxed);
    }
}

pin_project! {
    /// A response body that holds its [`ResponseInProgress`] until it is all handed to hyper
    /// (or dropped).
    struct InProgressBody<B> {
        #[pin]
        body: B,
        open: ResponseInProgress,
        under_way: BodyUnderWay,
    }
}

impl<B: hyper::body::Body> hyper::body::Body for InProgressBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = this.body.poll_frame(cx);
        this.under_way.set_waiting(frame.is_pending());
        if let Poll::Ready(Some(Ok(_))) = &frame {
            this.open.0.progress.fetch_add(1, Ordering::Relaxed);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// The connection's socket (below TLS), counting every write that moved bytes after the
/// connection's first request as activity: a response still leaving hyper's (and rustls's)
/// buffers for a slow reader is work, not idleness. Reads do not count (a trickled request head
/// must not keep a connection alive), nor do writes before any request (handshakes, HTTP/2
/// SETTINGS and PING acknowledgements must not keep a connection that never asks anything).
struct ActivityIo<T> {
    io: T,
    state: Arc<ConnState>,
}

impl<T: AsyncRead + Unpin> AsyncRead for ActivityIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

/// A socket write of at least this many bytes carries response data: control frames (an
/// HTTP/2 PING acknowledgement is 17 bytes, 46 with TLS 1.2's record overhead) are shorter,
/// so a client cannot keep a stalled response alive by pinging.
const DATA_WRITE: usize = 64;

impl<T: AsyncWrite + Unpin> ActivityIo<T> {
    fn wrote(&self, result: Poll<std::io::Result<usize>>) -> Poll<std::io::Result<usize>> {
        if let Poll::Ready(Ok(n)) = result
            && n > 0
            && self.state.served.load(Ordering::Relaxed)
        {
            self.state.activity.fetch_add(1, Ordering::Relaxed);
            if n >= DATA_WRITE {
                // A slow reader still reading: its response moves, if a frame at a time.
                self.state.progress.fetch_add(1, Ordering::Relaxed);
            }
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ActivityIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(result)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The header-read deadline of one connection (see the module documentation).
struct HeaderReadDeadline {
    interval: tokio::time::Interval,
    period: Duration,
    /// [`ConnState::activity`] at the last check.
    seen: u64,
}

impl HeaderReadDeadline {
    fn new(period: Duration) -> HeaderReadDeadline {
        let start = tokio::time::Instant::now();
        let first = start.checked_add(period).unwrap_or(start + Duration::from_secs(86_400));
        let mut interval = tokio::time::interval_at(first, period.max(Duration::from_millis(1)));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        HeaderReadDeadline { interval, period, seen: 0 }
    }

    /// Completes at the first check that finds the connection idle since the one before: no
    /// activity (see [`ConnState::activity`]), no response in progress, and no HTTP/2 request
    /// ever. Cancel-safe (a select branch).
    async fn expired(&mut self, state: &ConnState) {
        loop {
            self.interval.tick().await;
            let activity = state.activity.load(Ordering::Relaxed);
            if activity == self.seen
                && state.open.load(Ordering::Relaxed) == 0
                && !state.h2.load(Ordering::Relaxed)
            {
                return;
            }
            self.seen = activity;
        }
    }

    /// Waits for a connection already asked to close: busy ones finish, one that sends no
    /// request head is still closed by the deadline (not kept to the drain deadline).
    async fn finish<F: Future>(&mut self, connection: Pin<&mut F>, state: &ConnState) {
        tokio::select! {
            _ = connection => {}
            () = self.expired(state) => {}
        }
    }

    /// How long an idle connection, asked to close, may take to go (a GOAWAY to be written;
    /// an HTTP/1 connection with half a head buffered ignores the request) before it is dropped.
    fn close_grace(&self) -> Duration {
        self.period.min(Duration::from_secs(1))
    }
}

/// The write-progress and HTTP/2 idle deadlines of one connection (see the module
/// documentation), checked every quarter of the shorter one.
struct Quiet {
    interval: tokio::time::Interval,
    write_timeout: Duration,
    h2_idle: Duration,
    /// [`ConnState::progress`] at the last check, and since when it has not moved.
    progress: (u64, tokio::time::Instant),
    /// [`ConnState::streams`] at the last check, and since when it has not moved.
    streams: (u64, tokio::time::Instant),
}

/// Why [`Quiet::expired`] ended.
#[derive(Debug, PartialEq, Eq)]
enum Quieted {
    /// A response body made no progress for the write timeout.
    Stalled,
    /// An HTTP/2 connection had no open stream for the idle timeout.
    Idle,
}

impl Quiet {
    fn new(write_timeout: Duration, h2_idle: Duration) -> Quiet {
        let period = (write_timeout.min(h2_idle) / 4).max(Duration::from_millis(1));
        let start = tokio::time::Instant::now();
        let mut interval = tokio::time::interval_at(start + period, period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Quiet { interval, write_timeout, h2_idle, progress: (0, start), streams: (0, start) }
    }

    /// Completes at the first check that finds a response body stalled, or an HTTP/2
    /// connection idle. Cancel-safe (a select branch).
    async fn expired(&mut self, state: &ConnState) -> Quieted {
        loop {
            self.interval.tick().await;
            let now = tokio::time::Instant::now();
            // How long each counter has stood still.
            let still = |last: &mut (u64, tokio::time::Instant), counter: &AtomicU64| {
                let value = counter.load(Ordering::Relaxed);
                if value != last.0 {
                    *last = (value, now);
                }
                now.duration_since(last.1)
            };
            let unmoved = still(&mut self.progress, &state.progress);
            let no_streams = still(&mut self.streams, &state.streams);
            let held_up = state.bodies.load(Ordering::Relaxed) > state.waiting.load(Ordering::Relaxed);
            if held_up && unmoved >= self.write_timeout {
                return Quieted::Stalled;
            }
            if state.open.load(Ordering::Relaxed) == 0
                && state.h2.load(Ordering::Relaxed)
                && no_streams >= self.h2_idle
            {
                return Quieted::Idle;
            }
        }
    }
}

/// Serves `router` on `listener`, following `phase`. Returns whether the drain finished within
/// the deadline.
pub async fn serve<S>(
    listener: TcpListener,
    service: S,
    options: ServeOptions,
    tls: Option<Arc<ReloadableAcceptor>>,
    phase: watch::Receiver<Phase>,
) -> bool
where
    S: HttpService,
{
    let builder = builder(&options);
    let permits = Arc::new(Semaphore::new(options.max_connections));
    let sequence = AtomicU64::new(0);
    let mut watch_stop = phase.clone();
    let stopped = async move { watch_stop.wait_for(|p| *p == Phase::Stopped).await.map(|_| ()) };
    tokio::pin!(stopped);
    // Serves one accepted connection on its own task, holding its permit until it ends.
    let spawn = |stream: TcpStream, permit: OwnedSemaphorePermit| {
        let _ = stream.set_nodelay(true);
        let peer = Arc::new(Peer::new(stream.peer_addr().ok().map(|a| a.ip())));
        let state = Arc::new(ConnState::default());
        let stream = ActivityIo { io: stream, state: state.clone() };
        let max_age =
            options.max_connection_age.map(|age| jitter(age, sequence.fetch_add(1, Ordering::Relaxed)));
        let connection =
            Connection::new(service.clone(), builder.clone(), phase.clone(), &options, max_age, state, peer);
        let tls = tls.as_ref().map(|t| t.current());
        tokio::spawn(async move {
            match tls {
                None => connection.run(stream).await,
                Some(acceptor) => connection.run_tls(stream, acceptor).await,
            }
            drop(permit);
        });
    };
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("semaphore never closed"),
            _ = &mut stopped => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stopped => break,
        };
        spawn(stream, permit);
    }
    // Connections whose handshake the kernel finished before the listener closes are open for
    // their clients (who may have sent a request on them already): served under the drain,
    // not reset with the listener.
    take_queued(listener, &permits, spawn);
    // Every connection task holds a permit until it ends: all permits back means drained.
    let all = u32::try_from(options.max_connections).unwrap_or(u32::MAX);
    let drained = tokio::time::timeout(options.drain_timeout, permits.acquire_many(all)).await.is_ok();
    if !drained {
        tracing::warn!("drain deadline passed with connections still open; closing them");
    }
    drained
}

/// The connection builder: HTTP/1.1 and HTTP/2 (prior knowledge), with the limits of
/// `options` (see the module documentation).
fn builder(options: &ServeOptions) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    // The header-read deadline is each connection's own (see the module documentation).
    builder.http1().header_read_timeout(None);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(H2_PING_INTERVAL))
        .keep_alive_timeout(H2_PING_TIMEOUT)
        .max_concurrent_streams(options.http2_max_concurrent_streams)
        .initial_stream_window_size(H2_STREAM_WINDOW)
        .initial_connection_window_size(H2_CONNECTION_WINDOW)
        .max_send_buf_size(H2_SEND_BUFFER);
    builder
}

/// Serves one connection over any byte stream, as [`serve`] serves each accepted socket (no
/// TLS, never shutting down): for the connection-level fuzz target and tests that speak raw
/// bytes. Returns when the connection ends.
pub async fn serve_connection<S, T>(io: T, service: S, options: ServeOptions)
where
    S: HttpService,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (_phase, serving) = watch::channel(Phase::Serving);
    let state = Arc::new(ConnState::default());
    let io = ActivityIo { io, state: state.clone() };
    let peer = Arc::new(Peer::new(None));
    let connection = Connection::new(
        service,
        builder(&options),
        serving,
        &options,
        options.max_connection_age,
        state,
        peer,
    );
    connection.run(io).await;
}

/// Serves the connections waiting in `listener`'s accept queue, as many as the connection cap
/// has places for, without waiting (the socket is non-blocking: `WouldBlock` ends it), then
/// closes the listener. A handshake that completes in the few microseconds between the last
/// accept and the close is still reset; the shutdown delay is what keeps clients away by then.
fn take_queued(
    listener: TcpListener,
    permits: &Arc<Semaphore>,
    spawn: impl Fn(TcpStream, OwnedSemaphorePermit),
) {
    let Ok(listener) = listener.into_std() else {
        return;
    };
    let mut aborted = 0;
    while let Ok(permit) = permits.clone().try_acquire_owned() {
        match listener.accept() {
            Ok((stream, _)) => {
                // An accepted socket does not inherit the listener's O_NONBLOCK.
                if let Ok(stream) = stream.set_nonblocking(true).and_then(|()| TcpStream::from_std(stream)) {
                    spawn(stream, permit);
                }
            }
            // One connection's failure (reset before it was taken), not the queue's.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted && aborted < 64 => aborted += 1,
            // The queue is empty, or no descriptor or memory is left.
            Err(_) => break,
        }
    }
}

/// `age` scaled by a factor in [0.9, 1.1) picked by the connection's sequence number (a
/// multiplicative hash: not secret, only spread).
fn jitter(age: Duration, sequence: u64) -> Duration {
    let spread = (sequence.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as u32; // 0..1024
    age.mul_f64(0.9 + 0.2 * f64::from(spread) / 1024.0)
}

/// What [`serve`] serves: a cloneable tower service answering every request (errors are
/// responses), such as an axum `Router` or the API stack of [`crate::http::service`].
pub trait HttpService:
    tower::Service<
        Request<hyper::body::Incoming>,
        Response = Response<Self::Body>,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
    /// The response body.
    type Body: hyper::body::Body<Data = bytes::Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + 'static;
}

impl<S, B> HttpService for S
where
    S: tower::Service<
            Request<hyper::body::Incoming>,
            Response = Response<B>,
            Error = std::convert::Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static,
    B: hyper::body::Body<Data = bytes::Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + 'static,
{
    type Body = B;
}

/// One accepted connection and what ends it early.
struct Connection<S> {
    service: S,
    builder: Builder<TokioExecutor>,
    phase: watch::Receiver<Phase>,
    deadlines: Deadlines,
    /// The verified client certificate's identity (mTLS), put on every request.
    client: Option<Arc<ClientIdentity>>,
    /// What the request path and the socket tell the connection loop.
    state: Arc<ConnState>,
    /// The peer, put on every request (the per-peer limits of requests without credentials).
    peer: Arc<Peer>,
}

/// The deadlines of one connection.
#[derive(Debug, Clone, Copy)]
struct Deadlines {
    max_age: Option<Duration>,
    /// How long an aged connection may take to close before it is dropped.
    grace: Duration,
    /// How often an HTTP/1 connection must show activity (see the module documentation).
    header_read_timeout: Duration,
    /// See [`ServeOptions::write_timeout`].
    write_timeout: Duration,
    /// See [`ServeOptions::http2_idle_timeout`].
    http2_idle_timeout: Duration,
}

impl<S: HttpService> Connection<S> {
    fn new(
        service: S,
        builder: Builder<TokioExecutor>,
        phase: watch::Receiver<Phase>,
        options: &ServeOptions,
        max_age: Option<Duration>,
        state: Arc<ConnState>,
        peer: Arc<Peer>,
    ) -> Self {
        Connection {
            service,
            builder,
            phase,
            deadlines: Deadlines {
                max_age,
                grace: options.drain_timeout,
                header_read_timeout: options.header_read_timeout,
                write_timeout: options.write_timeout,
                http2_idle_timeout: options.http2_idle_timeout,
            },
            client: None,
            state,
            peer,
        }
    }

    /// [`Connection::run`] over TLS, once the handshake is done (within the header-read
    /// timeout), with the verified client certificate's identity if one was presented.
    async fn run_tls(self, stream: ActivityIo<TcpStream>, acceptor: tokio_rustls::TlsAcceptor) {
        match tokio::time::timeout(self.deadlines.header_read_timeout, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => {
                // Verified by rustls against tls.client_ca_file, when presented.
                let client = stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|chain| chain.first())
                    .and_then(|cert| ClientIdentity::from_der(cert))
                    .map(Arc::new);
                Connection { client, ..self }.run(stream).await;
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
            Err(_) => tracing::debug!("TLS handshake timed out"),
        }
    }

    /// Serves until the client closes; asks the connection to end (GOAWAY / `Connection:
    /// close`) when draining starts or it reaches its age, closes it gracefully when the
    /// listener stops, and drops it if it outlives its age by the grace period.
    async fn run<T: AsyncRead + AsyncWrite + Unpin + Send + 'static>(self, stream: T) {
        let Connection { service, builder, phase, deadlines, client, state, peer } = self;
        let service = connection_layer(service, client, peer, state.clone());
        let connection =
            builder.serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service));
        tokio::pin!(connection);
        drive(connection, |c| c.graceful_shutdown(), phase, &state, deadlines).await;
    }
}

/// The loop of [`Connection::run`]: serves `connection` until it ends, following the phase
/// and the deadlines; `graceful` is hyper's graceful shutdown of it (HTTP/2 GOAWAY, HTTP/1
/// no more keep-alive).
async fn drive<C: Future>(
    mut connection: Pin<&mut C>,
    graceful: impl Fn(Pin<&mut C>),
    mut phase: watch::Receiver<Phase>,
    state: &ConnState,
    deadlines: Deadlines,
) {
    let Deadlines { max_age, grace, header_read_timeout, write_timeout, http2_idle_timeout } = deadlines;
    let mut aged = Box::pin(sleep_or_never(max_age));
    let mut age_passed = false;
    let mut goaway_sent = false;
    let mut idle = HeaderReadDeadline::new(header_read_timeout);
    let mut quiet = Quiet::new(write_timeout, http2_idle_timeout);
    let side_flag = woken::Flag::new();
    loop {
        let now = *phase.borrow_and_update();
        if now == Phase::Stopped {
            close_stopped(connection.as_mut(), &graceful, state, goaway_sent, &mut idle).await;
            return;
        }
        if now == Phase::Draining && !state.closing.load(Ordering::Relaxed) && ask_to_move(state) {
            graceful(connection.as_mut());
            goaway_sent = true;
        }
        // The side events, polled only when one of them woke the task (not on every wake
        // of the connection: see `woken`).
        let side = woken::OnWake::new(
            next_side(state, goaway_sent, &mut phase, &mut idle, &mut quiet, aged.as_mut()),
            &side_flag,
        );
        let side = tokio::select! {
            _ = connection.as_mut() => return,
            side = side => side,
        };
        match side {
            Side::H2SeenLate => {
                graceful(connection.as_mut());
                goaway_sent = true;
            }
            Side::Phase { sender_gone } => {
                if sender_gone {
                    // The sender is gone: nothing will say Stopped, so stop now.
                    graceful(connection.as_mut());
                    idle.finish(connection.as_mut(), state).await;
                    return;
                }
            }
            Side::Idle => {
                close_quiet(connection.as_mut(), &graceful, state, None, idle.close_grace(), grace).await;
                return;
            }
            Side::Quiet(quieted) => {
                let close_grace = idle.close_grace();
                close_quiet(connection.as_mut(), &graceful, state, Some(quieted), close_grace, grace).await;
                return;
            }
            Side::Aged => {
                if age_passed {
                    // Asked to move a grace period ago and still open: drop it.
                    return;
                }
                age_passed = true;
                if !state.closing.load(Ordering::Relaxed) && ask_to_move(state) {
                    graceful(connection.as_mut());
                    goaway_sent = true;
                }
                aged = Box::pin(sleep_or_never(Some(grace)));
            }
        }
    }
}

/// `service` with the connection's own layer: each request gets the client certificate's
/// identity and the peer, and tells `state` it was served (and whether it is HTTP/2); each
/// response is tracked to the end of its body, and says `Connection: close` once the
/// connection is closing.
fn connection_layer<S: HttpService>(
    service: S,
    client: Option<Arc<ClientIdentity>>,
    peer: Arc<Peer>,
    state: Arc<ConnState>,
) -> impl tower::Service<
    Request<hyper::body::Incoming>,
    Response = Response<InProgressBody<S::Body>>,
    Error = std::convert::Infallible,
    Future: Send + 'static,
> + Clone
+ Send
+ Sync
+ 'static {
    let (seen, tracked) = (state.clone(), state);
    ServiceBuilder::new()
        .map_request(move |mut request: Request<hyper::body::Incoming>| {
            seen.served.store(true, Ordering::Relaxed);
            if let Some(client) = &client {
                request.extensions_mut().insert(client.clone());
            }
            request.extensions_mut().insert(peer.clone());
            if request.version() == Version::HTTP_2
                && !seen.h2.swap(true, Ordering::Relaxed)
                && seen.closing.load(Ordering::Relaxed)
            {
                seen.h2_seen_late.notify_one();
            }
            request
        })
        .map_future(move |future: S::Future| {
            let open = ResponseInProgress::start(&tracked);
            async move {
                let Ok(mut response) = future.await;
                // HTTP/1: the client will not reuse this connection (hyper strips the
                // header from HTTP/2 responses, where GOAWAY does the job).
                if open.0.closing.load(Ordering::Relaxed) {
                    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                let under_way = BodyUnderWay::start(&open.0);
                Ok::<_, std::convert::Infallible>(response.map(|body| InProgressBody {
                    body,
                    open,
                    under_way,
                }))
            }
        })
        .service(service)
}

/// Closes a connection at [`Phase::Stopped`]: asked to close (unless it was sent GOAWAY
/// already), busy ones finish, and one that sends no request head is still closed by the
/// header-read deadline.
async fn close_stopped<C: Future>(
    mut connection: Pin<&mut C>,
    graceful: impl Fn(Pin<&mut C>),
    state: &ConnState,
    goaway_sent: bool,
    idle: &mut HeaderReadDeadline,
) {
    state.closing.store(true, Ordering::Relaxed);
    // A connection accepted just before the listener closed may not have had its first
    // request read yet; closing it now would drop that request. Give it a moment to arrive
    // (it is then in flight and finishes under the drain).
    let mut waited = Duration::ZERO;
    while !state.served.load(Ordering::Relaxed) && waited < FIRST_REQUEST_GRACE {
        tokio::select! {
            _ = connection.as_mut() => return,
            () = tokio::time::sleep(Duration::from_millis(10)) => waited += Duration::from_millis(10),
        }
    }
    if !goaway_sent {
        graceful(connection.as_mut());
    }
    idle.finish(connection.as_mut(), state).await;
}

/// The next side event of a connection (see [`Side`]); cancel-safe, as each of its branches.
async fn next_side<A: Future<Output = ()>>(
    state: &ConnState,
    goaway_sent: bool,
    phase: &mut watch::Receiver<Phase>,
    idle: &mut HeaderReadDeadline,
    quiet: &mut Quiet,
    aged: Pin<&mut A>,
) -> Side {
    tokio::select! {
        () = state.h2_seen_late.notified(), if !goaway_sent => Side::H2SeenLate,
        changed = phase.changed() => Side::Phase { sender_gone: changed.is_err() },
        () = idle.expired(state) => Side::Idle,
        quieted = quiet.expired(state) => Side::Quiet(quieted),
        () = aged => Side::Aged,
    }
}

/// Closes a connection a deadline found quiet: `None`, no request head within the header-read
/// timeout; else why [`Quiet::expired`] ended. A stalled one is dropped after `close_grace`;
/// the others are too, unless a request arrived meanwhile, which gets the drain's time
/// (`grace`) to finish.
async fn close_quiet<C: Future>(
    mut connection: Pin<&mut C>,
    graceful: impl Fn(Pin<&mut C>),
    state: &ConnState,
    quieted: Option<Quieted>,
    close_grace: Duration,
    grace: Duration,
) {
    match quieted {
        None => {
            tracing::debug!("no request head within the header-read timeout; closing");
            graceful(connection.as_mut());
        }
        Some(Quieted::Stalled) => {
            graceful(connection.as_mut());
            // Its client stopped reading: the connection goes (other streams get the close
            // grace to finish), and with it the body and whatever it holds (the caller's
            // place, a reservation).
            tracing::debug!("a response made no progress within the write timeout; closing");
            let _ = tokio::time::timeout(close_grace, connection.as_mut()).await;
            return;
        }
        Some(Quieted::Idle) => {
            graceful(connection.as_mut());
            tracing::debug!("no HTTP/2 stream within the idle timeout; closing");
        }
    }
    if tokio::time::timeout(close_grace, connection.as_mut()).await.is_err()
        && state.open.load(Ordering::Relaxed) > 0
    {
        // A request arrived meanwhile: it gets the drain's time to finish.
        let _ = tokio::time::timeout(grace, connection.as_mut()).await;
    }
}

/// What woke a connection's loop besides the connection itself.
enum Side {
    /// An HTTP/2 request arrived after the shutdown began: GOAWAY now.
    H2SeenLate,
    /// The shutdown phase changed (or its sender is gone).
    Phase { sender_gone: bool },
    /// No request head within the header-read timeout.
    Idle,
    /// A stalled response or an idle HTTP/2 connection.
    Quiet(Quieted),
    /// The maximum age passed (or, after it, the grace to move).
    Aged,
}

/// Marks the connection closing (HTTP/1: `Connection: close` on the next response) and says
/// whether it speaks HTTP/2, in which case the caller sends GOAWAY now.
fn ask_to_move(state: &ConnState) -> bool {
    state.closing.store(true, Ordering::Relaxed);
    state.h2.load(Ordering::Relaxed)
}

/// Sleeps for `duration`, or for ever when `None`.
async fn sleep_or_never(duration: Option<Duration>) {
    match duration {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_spreads_within_ten_percent() {
        let age = Duration::from_secs(100);
        let ages: Vec<Duration> = (0..1000).map(|i| jitter(age, i)).collect();
        assert!(ages.iter().all(|a| (Duration::from_secs(90)..Duration::from_secs(110)).contains(a)));
        let distinct: std::collections::BTreeSet<_> = ages.iter().collect();
        assert!(distinct.len() > 500, "{}", distinct.len());
    }
}
