//! Lifecycle counters of the generators (reseeds by reason, failures), shared by every shard
//! and read by the metrics layer. Plain atomics: the DRBG core does not know Prometheus.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Algorithm;
use super::reseed::ReseedReason;

const ALGS: usize = Algorithm::ALL.len();
const REASONS: usize = ReseedReason::ALL.len();

/// Counters per algorithm. All monotonic.
#[derive(Debug, Default)]
pub struct Stats {
    reseeds: [[AtomicU64; REASONS]; ALGS],
    reseed_failures: [AtomicU64; ALGS],
    health_failures: [AtomicU64; ALGS],
    entropy_failures: AtomicU64,
}

impl Stats {
    /// Counts a successful (re)seed.
    pub fn reseeded(&self, alg: Algorithm, reason: ReseedReason) {
        self.reseeds[alg.index()][reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a reseed that failed because the entropy source failed.
    pub fn reseed_failed(&self, alg: Algorithm) {
        self.reseed_failures[alg.index()].fetch_add(1, Ordering::Relaxed);
        self.entropy_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a continuous health-test failure.
    pub fn health_failed(&self, alg: Algorithm) {
        self.health_failures[alg.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Successful (re)seeds of `alg` for `reason`.
    pub fn reseeds(&self, alg: Algorithm, reason: ReseedReason) -> u64 {
        self.reseeds[alg.index()][reason.index()].load(Ordering::Relaxed)
    }

    /// Failed reseeds of `alg`.
    pub fn reseed_failures(&self, alg: Algorithm) -> u64 {
        self.reseed_failures[alg.index()].load(Ordering::Relaxed)
    }

    /// Continuous health-test failures of `alg`.
    pub fn health_failures(&self, alg: Algorithm) -> u64 {
        self.health_failures[alg.index()].load(Ordering::Relaxed)
    }

    /// Failed requests to the entropy source.
    pub fn entropy_failures(&self) -> u64 {
        self.entropy_failures.load(Ordering::Relaxed)
    }
}
