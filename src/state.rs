//! The state every handler shares: one clone-cheap handle.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::callers::Callers;
use crate::config::Settings;
use crate::drbg::Pool;
use crate::metrics::Metrics;
use crate::receipts::Receipts;
use crate::service::Service;
use crate::telemetry::request_id::ProcessRequestIds;

/// Shared application state, extracted by handlers with `State<AppState>`.
#[derive(Clone, Debug)]
pub struct AppState(Arc<Inner>);

/// What [`AppState`] holds.
#[derive(Debug)]
pub struct Inner {
    /// Requests in, output out: the only way transports reach the generators.
    pub service: Service,
    /// The generator shards (readiness and `/algorithms` read them; requests go through
    /// `service`).
    pub pool: Arc<Pool>,
    /// Prometheus series.
    pub metrics: Arc<Metrics>,
    /// Validated settings.
    pub settings: Settings,
    /// Start-up and shutdown state for /readyz.
    pub readiness: Readiness,
    /// The callers: credentials, policies, quotas (reloadable).
    pub callers: Callers,
    /// Signed receipts: whether they are issued, and the keys (reloadable).
    pub receipts: Receipts,
    /// Maker of request ids (process prefix + counter).
    pub request_ids: ProcessRequestIds,
    /// `/openapi.json`, rendered once from the rules and the auth setting.
    pub openapi: bytes::Bytes,
    /// The randomness beacon, with `[beacon] enabled`.
    pub beacon: Option<Arc<crate::beacon::Beacon>>,
}

impl AppState {
    /// Wraps the parts.
    pub fn new(inner: Inner) -> Self {
        AppState(Arc::new(inner))
    }

    /// Checks readiness — self-tests passed, not shutting down, the entropy source answers,
    /// every generator seeded (one waiting for a reseed is retried here) — and publishes the
    /// result to the `drbgd_ready` gauge.
    pub fn check_ready(&self) -> bool {
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
