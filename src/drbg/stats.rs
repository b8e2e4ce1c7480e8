//! Lifecycle counters of the generators (reseeds by [`ReseedReason`], failures), shared by every
//! shard and read by the metrics layer. Plain atomics: the DRBG core does not know Prometheus.

use std::sync::atomic::{AtomicU64, Ordering};

use super::algorithm_id::Algorithm;

/// Why a generator was (re)seeded. Exported as the `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReseedReason {
    /// Instantiation: at start-up, or again after a health-test failure.
    Startup,
    /// The byte threshold was reached.
    Threshold,
    /// The key reached its maximum age.
    Age,
    /// The process forked since the last seed.
    Fork,
    /// The virtual machine was cloned or restored from a snapshot since the last seed (the
    /// kernel's `NEW_VMGENID` announcement).
    VmFork,
    /// The caller asked for prediction resistance.
    PredictionResistance,
}

impl ReseedReason {
    /// Every reason, in label order.
    pub const ALL: [ReseedReason; 6] = [
        ReseedReason::Startup,
        ReseedReason::Threshold,
        ReseedReason::Age,
        ReseedReason::Fork,
        ReseedReason::VmFork,
        ReseedReason::PredictionResistance,
    ];

    /// The label value.
    pub const fn name(self) -> &'static str {
        match self {
            ReseedReason::Startup => "startup",
            ReseedReason::Threshold => "threshold",
            ReseedReason::Age => "age",
            ReseedReason::Fork => "fork",
            ReseedReason::VmFork => "vm_fork",
            ReseedReason::PredictionResistance => "prediction_resistance",
        }
    }

    /// Position in [`ReseedReason::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

const ALGS: usize = Algorithm::COUNT;
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
