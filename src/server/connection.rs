//! One accepted connection: the service it serves (with the client's certificate identity and
//! its peer on every request), its builder, what ends it early (its age, its deadlines, the
//! listener's phase) and how it is closed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::http::{HeaderValue, Request, Response, Version, header};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tower::ServiceBuilder;

use super::activity::*;
use super::deadline::*;
use super::options::*;
use super::woken;
use crate::callers::ClientIdentity;
use crate::callers::peer::Peer;

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
pub(super) struct Connection<S> {
    pub(super) service: S,
    pub(super) builder: Builder<TokioExecutor>,
    pub(super) phase: watch::Receiver<Phase>,
    pub(super) deadlines: Deadlines,
    /// The verified client certificate's identity (mTLS), put on every request.
    pub(super) client: Option<Arc<ClientIdentity>>,
    /// What the request path and the socket tell the connection loop.
    pub(super) state: Arc<ConnState>,
    /// The peer, put on every request (the per-peer limits of requests without credentials).
    pub(super) peer: Arc<Peer>,
}

/// The deadlines of one connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadlines {
    pub(super) max_age: Option<Duration>,
    /// How long an aged connection may take to close before it is dropped.
    pub(super) grace: Duration,
    /// How often an HTTP/1 connection must show activity (see the module documentation).
    pub(super) header_read_timeout: Duration,
    /// See [`ServeOptions::write_timeout`].
    pub(super) write_timeout: Duration,
    /// See [`ServeOptions::http2_idle_timeout`].
    http2_idle_timeout: Duration,
}

impl<S: HttpService> Connection<S> {
    pub(super) fn new(
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
    pub(super) async fn run_tls(self, stream: ActivityIo<TcpStream>, acceptor: tokio_rustls::TlsAcceptor) {
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
    pub(super) async fn run<T: AsyncRead + AsyncWrite + Unpin + Send + 'static>(self, stream: T) {
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
pub(super) async fn drive<C: Future>(
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
pub(super) fn connection_layer<S: HttpService>(
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
pub(super) async fn close_stopped<C: Future>(
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
pub(super) async fn next_side<A: Future<Output = ()>>(
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
pub(super) async fn close_quiet<C: Future>(
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
pub(super) enum Side {
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
pub(super) fn ask_to_move(state: &ConnState) -> bool {
    state.closing.store(true, Ordering::Relaxed);
    state.h2.load(Ordering::Relaxed)
}

/// Sleeps for `duration`, or for ever when `None`.
pub(super) async fn sleep_or_never(duration: Option<Duration>) {
    match duration {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}
