//! The connection loop shared by the API and admin listeners: HTTP/1.1 and HTTP/2 (so gRPC)
//! on one port, optional TLS (its acceptor re-read per connection, so a reloaded certificate
//! applies to new connections without dropping open ones), a cap on open connections,
//! header-read and handshake timeouts, a maximum connection age, and graceful draining with a
//! deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use crate::tls::ReloadableAcceptor;

/// Connection limits and deadlines.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// Open connections at once; accepting pauses at the limit.
    pub max_connections: usize,
    /// Time to receive a request's headers (HTTP/1).
    pub header_read_timeout: Duration,
    /// Time in-flight requests get after `shutdown` completes.
    pub drain_timeout: Duration,
    /// Connections older than this are closed gracefully (HTTP/2 GOAWAY, HTTP/1 after the
    /// current request), so clients reconnect and rebalance; `None`: never.
    pub max_connection_age: Option<Duration>,
}

/// Serves `router` on `listener` until `shutdown` completes, then stops accepting, asks every
/// open connection to finish gracefully, and waits at most `drain_timeout` for them. Returns
/// whether the drain finished in time.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    options: ServeOptions,
    tls: Option<Arc<ReloadableAcceptor>>,
    shutdown: impl Future<Output = ()>,
) -> bool {
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(options.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    let permits = Arc::new(Semaphore::new(options.max_connections));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("semaphore never closed"),
            () = &mut shutdown => break,
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
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let connection = Connection {
            service: TowerToHyperService::new(router.clone()),
            builder: builder.clone(),
            stop: stop_rx.clone(),
            max_age: options.max_connection_age,
        };
        let tls = tls.as_ref().map(|t| t.current());
        let handshake_timeout = options.header_read_timeout;
        tokio::spawn(async move {
            match tls {
                None => connection.run(stream).await,
                Some(acceptor) => {
                    match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => connection.run(stream).await,
                        Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!("TLS handshake timed out"),
                    }
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection task holds a permit until it ends: all permits back means drained.
    let all = u32::try_from(options.max_connections).unwrap_or(u32::MAX);
    let drained = tokio::time::timeout(options.drain_timeout, permits.acquire_many(all)).await.is_ok();
    if !drained {
        tracing::warn!("drain deadline passed with connections still open; closing them");
    }
    drained
}

/// One accepted connection and what ends it early.
struct Connection {
    service: TowerToHyperService<Router>,
    builder: Builder<TokioExecutor>,
    stop: watch::Receiver<bool>,
    max_age: Option<Duration>,
}

impl Connection {
    /// Serves until the client closes, or, after shutdown or at its maximum age, until the
    /// requests in progress finish (graceful shutdown of this connection).
    async fn run<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(self, stream: S) {
        let Connection { service, builder, mut stop, max_age } = self;
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
        tokio::pin!(connection);
        let aged = async {
            match max_age {
                Some(age) => tokio::time::sleep(age).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = connection.as_mut() => return,
            _ = stop.wait_for(|stop| *stop) => {}
            () = aged => {}
        }
        connection.as_mut().graceful_shutdown();
        let _ = connection.await;
    }
}
