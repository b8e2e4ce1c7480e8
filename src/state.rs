//! The state every handler shares: one clone-cheap handle.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::auth::Keyring;
use crate::config::Settings;
use crate::drbg::{Algorithm, Pool};
use crate::http::request_id::ProcessRequestIds;
use crate::metrics::Metrics;

/// Shared application state, extracted by handlers with `State<AppState>`.
#[derive(Clone, Debug)]
pub struct AppState(Arc<Inner>);

/// What [`AppState`] holds.
#[derive(Debug)]
pub struct Inner {
    /// The generator shards.
    pub pool: Pool,
    /// Prometheus series.
    pub metrics: Metrics,
    /// Validated settings.
    pub settings: Settings,
    /// Start-up and shutdown state for /readyz.
    pub readiness: Readiness,
    /// Algorithms callers may choose.
    pub enabled: Vec<Algorithm>,
    /// Algorithm used when none is named.
    pub default_alg: Algorithm,
    /// Accepted API keys (digests), when auth is on.
    pub api_keys: Option<Keyring>,
    /// Maker of request ids (process prefix + counter).
    pub request_ids: ProcessRequestIds,
}

impl AppState {
    /// Wraps the parts.
    pub fn new(inner: Inner) -> Self {
        AppState(Arc::new(inner))
    }

    /// Ready to serve: self-tests passed, not shutting down, and every generator seeded (a
    /// generator refusing because its reseed failed is retried here first).
    pub fn is_ready(&self) -> bool {
        let ready = self.readiness.self_tests_passed.load(Ordering::Acquire)
            && !self.readiness.shutting_down.load(Ordering::Acquire)
            && self.pool.all_ready();
        self.metrics.ready.set(i64::from(ready));
        ready
    }
}

impl Deref for AppState {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// Readiness flags.
#[derive(Debug, Default)]
pub struct Readiness {
    /// Set once the start-up self-tests pass.
    pub self_tests_passed: AtomicBool,
    /// Set when shutdown begins; /readyz turns 503 at once.
    pub shutting_down: AtomicBool,
}
