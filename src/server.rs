//! The connection loop shared by the API and admin listeners: HTTP/1.1 and HTTP/2 (so gRPC)
//! on one port, optional TLS, a cap on open connections, header-read and handshake timeouts,
//! and graceful draining with a deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

/// Connection limits and deadlines.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// Open connections at once; accepting pauses at the limit.
    pub max_connections: usize,
    /// Time to receive a request's headers (HTTP/1).
    pub header_read_timeout: Duration,
    /// Time in-flight requests get after `shutdown` completes.
    pub drain_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown` completes, then stops accepting and lets open
/// connections finish for at most `drain_timeout`. Returns whether the drain finished in time.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    options: ServeOptions,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) -> bool {
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(options.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
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
        let service = TowerToHyperService::new(router.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let handshake_timeout = options.header_read_timeout;
        tokio::spawn(async move {
            match tls {
                None => {
                    let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    let _ = watcher.watch(connection.into_owned()).await;
                }
                Some(acceptor) => {
                    match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            let connection =
                                builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                            let _ = watcher.watch(connection.into_owned()).await;
                        }
                        Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!("TLS handshake timed out"),
                    }
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    let drained = tokio::time::timeout(options.drain_timeout, graceful.shutdown()).await.is_ok();
    if !drained {
        tracing::warn!("drain deadline passed with connections still open; closing them");
    }
    drained
}
