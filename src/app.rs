//! Builds the application from settings (self-tests, pool, listeners, state) and runs it
//! until a shutdown future completes: readiness off, drain, exit.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::auth::ApiKeys;
use crate::config::Settings;
use crate::drbg::entropy::{EntropySource, OsEntropy};
use crate::drbg::{Pool, selftest};
use crate::metrics::Metrics;
use crate::server::{ServeOptions, serve};
use crate::state::{AppState, Inner, Readiness};

/// A built, bound, not yet running application.
pub struct App {
    tls: Option<tokio_rustls::TlsAcceptor>,
    api: TcpListener,
    admin: TcpListener,
    state: AppState,
}

impl App {
    /// Runs the self-tests, seeds the pool from the OS and binds both listeners.
    ///
    /// # Errors
    /// A failed self-test, an entropy source that cannot seed, invalid API key settings, or a
    /// listener that cannot bind. drbgd never starts serving in any of these cases.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with_entropy(settings, Arc::new(OsEntropy)).await
    }

    /// [`App::build`] with another entropy source (tests).
    ///
    /// # Errors
    /// See [`App::build`].
    pub async fn build_with_entropy(
        settings: Settings,
        entropy: Arc<dyn EntropySource>,
    ) -> anyhow::Result<Self> {
        settings.validate()?;
        selftest::run_all().context("self-test failed; refusing to start")?;
        let tls = crate::tls::acceptor(&settings.tls)?;
        let pool =
            Pool::new(&settings.pool_config(), entropy).context("cannot seed the generators from the OS")?;
        let metrics = Metrics::new(pool.stats().clone());
        metrics.shards.set(pool.shard_count() as i64);
        let api = TcpListener::bind(settings.server.listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.server.listen))?;
        let admin = TcpListener::bind(settings.server.admin_listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.server.admin_listen))?;
        let state = AppState::new(Inner {
            api_keys: ApiKeys::from_settings(&settings)?,
            enabled: settings.enabled_algorithms().map_err(anyhow::Error::msg)?,
            default_alg: settings.default_algorithm().map_err(anyhow::Error::msg)?,
            pool,
            metrics,
            settings,
            readiness: Readiness::default(),
        });
        state.readiness.self_tests_passed.store(true, Ordering::Release);
        Ok(App { tls, api, admin, state })
    }

    /// Whether the API listener serves TLS.
    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The bound API address (port 0 resolved).
    pub fn api_addr(&self) -> SocketAddr {
        self.api.local_addr().expect("bound listener has an address")
    }

    /// The bound admin address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin.local_addr().expect("bound listener has an address")
    }

    /// The shared state.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes; then /readyz turns 503 at once, the API stops
    /// accepting and drains in-flight requests within `server.drain_timeout_ms`, and the admin
    /// listener (still answering /readyz and /metrics during the drain) stops last.
    ///
    /// # Errors
    /// None today; the signature leaves room for listener failures.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let s = &self.state.settings.server;
        let options = ServeOptions {
            max_connections: s.max_connections,
            header_read_timeout: Duration::from_millis(s.header_read_timeout_ms),
            drain_timeout: Duration::from_millis(s.drain_timeout_ms),
        };
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let state = self.state.clone();
        tokio::spawn(async move {
            shutdown.await;
            state.readiness.shutting_down.store(true, Ordering::Release);
            state.metrics.ready.set(0);
            tracing::info!("shutting down: not ready, draining");
            let _ = stop_tx.send(true);
        });
        let api_router = crate::http::router(self.state.clone(), crate::grpc::router(self.state.clone()));
        let admin_router = crate::admin::router(self.state.clone());
        let (admin_done_tx, admin_done_rx) = tokio::sync::oneshot::channel::<()>();
        let admin = tokio::spawn(serve(self.admin, admin_router, options, None, async {
            let _ = admin_done_rx.await;
        }));
        let mut rx = stop_rx.clone();
        let drained = serve(self.api, api_router, options, self.tls, async move {
            let _ = rx.wait_for(|stop| *stop).await;
        })
        .await;
        let _ = admin_done_tx.send(());
        let _ = admin.await;
        tracing::info!(drained, "stopped");
        Ok(())
    }
}
