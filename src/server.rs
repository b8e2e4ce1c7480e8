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
//!
//! This file holds the listener (the accept loop, the phases, the connection cap); one
//! connection's service, builder and close are `server/connection.rs`'s; what a connection did
//! (responses in progress, bodies under way, socket writes) `server/activity.rs`'s; the
//! deadlines read from it `server/deadline.rs`'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::callers::peer::Peer;
use crate::tls::ReloadableAcceptor;

mod activity;
mod connection;
mod deadline;
mod options;
mod woken;

use activity::*;
pub use connection::HttpService;
use connection::*;
use options::*;
pub use options::{Phase, ServeOptions};

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
