//! The state every handler shares: one clone-cheap handle.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::callers::Callers;
use crate::config::Settings;
use crate::drbg::Pool;
use crate::drbg::selftest::SelfTestError;
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
    /// Single-use tickets and their kept results, with `[tickets] enabled`.
    pub tickets: Option<Arc<crate::tickets::Tickets>>,
    /// RANDOM.ORG's API's door, with `[randomorg] enabled`.
    pub randomorg: Option<Arc<crate::randomorg::RandomOrg>>,
}

impl AppState {
    /// Wraps the parts.
    pub fn new(inner: Inner) -> Self {
        AppState(Arc::new(inner))
    }

    /// Checks readiness — every start-up self-test passed, not shutting down, the entropy source
    /// answers, every generator seeded (one waiting for a reseed is retried here) — and
    /// publishes the result to the `drbgd_ready` gauge. A failed self-test keeps it false for
    /// the life of the process.
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
    /// Set once the start-up self-tests have run and all passed.
    pub self_tests_passed: AtomicBool,
    /// Set when shutdown begins; /readyz turns 503 at once.
    pub shutting_down: AtomicBool,
    /// The start-up self-tests that failed (their algorithms are not served), fixed at start.
    pub self_test_failures: Vec<SelfTestError>,
}

impl Readiness {
    /// Why the start-up self-tests keep the service unready, naming each algorithm and test;
    /// `None` if they all passed.
    pub fn self_test_reason(&self) -> Option<String> {
        if self.self_test_failures.is_empty() {
            return None;
        }
        let failed: Vec<String> =
            self.self_test_failures.iter().map(|f| format!("{} (test: {})", f.alg, f.what)).collect();
        Some(format!("start-up self-test failed; not served: {}", failed.join(", ")))
    }
}
