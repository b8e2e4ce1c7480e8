//! The managed generator: any [`Drbg`] wrapped with its reseed thresholds, prediction
//! resistance, fork detection and the continuous health test. All reseeding happens on a
//! cold path that allocates nothing.

use std::sync::Arc;
use std::time::Duration;

use coarsetime::Instant;

use zeroize::Zeroize;

use super::entropy::EntropySource;
use super::fork;
use super::generator::{Drbg, DrbgError};
use super::stats::{ReseedReason, Stats};

/// Default bytes between reseeds: 1 MiB. A 32-byte token stream reseeds every ~32k requests,
/// bulk output every ~16 chunks of 64 KiB: a few reseeds per second under heavy load, each
/// one getrandom call (~0.5 µs), so the cost stays far below 0.1 %.
pub const DEFAULT_REKEY_AFTER_BYTES: u64 = 1 << 20;
/// Default maximum key age: 60 s bounds how long a captured state predicts output, even for
/// an idle generator.
pub const DEFAULT_REKEY_AFTER_SECONDS: u64 = 60;
/// Smallest accepted byte threshold: below one 4 KiB page the reseed cost dominates.
pub const MIN_REKEY_AFTER_BYTES: u64 = 4096;
/// A stream is not started on a key that expires within this: it would need an age reseed
/// midway, which an entropy outage would turn into a cut body. 5 s covers a stream of the
/// default maximum (12.5 MB) to any client reading 2.5 MB/s or faster.
const AGE_MARGIN: std::time::Duration = std::time::Duration::from_secs(5);
/// Bytes compared by the continuous health test.
const SAMPLE_LEN: usize = 16;

/// When a generator must reseed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReseedPolicy {
    /// Base byte threshold; the actual one is `base + r % base` with jitter on.
    pub rekey_after_bytes: u64,
    /// Maximum time between reseeds.
    pub rekey_after: Duration,
    /// arc4random-style randomized threshold (the paper on a non-deterministic arc4random rekey
    /// interval).
    pub jitter: bool,
}

impl Default for ReseedPolicy {
    fn default() -> Self {
        ReseedPolicy {
            rekey_after_bytes: DEFAULT_REKEY_AFTER_BYTES,
            rekey_after: Duration::from_secs(DEFAULT_REKEY_AFTER_SECONDS),
            jitter: true,
        }
    }
}

impl ReseedPolicy {
    /// The byte threshold for one interval, given a random draw `r` from the generator.
    pub fn threshold(&self, r: u64) -> u64 {
        let base = self.rekey_after_bytes.max(1);
        if self.jitter { base + r % base } else { base }
    }
}

/// A [`Drbg`] that reseeds itself, detects forks and checks its own output.
pub struct Managed<G> {
    /// `None` until seeded, and again after a health-test failure.
    drbg: Option<G>,
    entropy: Arc<dyn EntropySource>,
    stats: Arc<Stats>,
    personalization: Arc<[u8]>,
    policy: ReseedPolicy,
    /// Bytes left before the threshold reseed.
    budget: u64,
    /// Part of `budget` set aside for streams that have sent their status line (see
    /// [`Managed::prepare`]); other fills may only use the rest.
    reserved: u64,
    /// When the key expires.
    deadline: Instant,
    fork_generation: u64,
    /// A reseed that failed for lack of entropy: the generator refuses until it succeeds.
    pending: Option<ReseedReason>,
    /// Keyed 64-bit fingerprint of the previous health-test sample (a block never served),
    /// and the key for it.
    last_fingerprint: u64,
    fingerprint_key: [u64; 2],
    reseeds: u64,
}

impl<G: Drbg> std::fmt::Debug for Managed<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Managed")
            .field("alg", &G::ALGORITHM)
            .field("seeded", &self.drbg.is_some())
            .field("policy", &self.policy)
            .field("reseeds", &self.reseeds)
            .finish_non_exhaustive()
    }
}

impl<G: Drbg> Managed<G> {
    /// Instantiates a generator from `entropy`.
    ///
    /// # Errors
    /// [`DrbgError::EntropyUnavailable`] when the entropy source fails.
    pub fn new(
        entropy: Arc<dyn EntropySource>,
        stats: Arc<Stats>,
        personalization: Arc<[u8]>,
        policy: ReseedPolicy,
    ) -> Result<Self, DrbgError> {
        let mut managed = Managed {
            drbg: None,
            entropy,
            stats,
            personalization,
            policy,
            budget: 0,
            reserved: 0,
            deadline: Instant::now_without_cache_update(),
            fork_generation: fork::generation(),
            pending: None,
            last_fingerprint: 0,
            fingerprint_key: fingerprint_key(),
            reseeds: 0,
        };
        managed.reseed(ReseedReason::Startup)?;
        Ok(managed)
    }

    /// Whether the generator can serve: seeded, and no reseed outstanding for lack of
    /// entropy. A generator that cannot serve tries its outstanding (re)seed first, so a
    /// readiness probe also heals it once the entropy source is back; after a fork or a VM
    /// clone the probe reseeds it at once rather than at its next output.
    pub fn ready(&mut self) -> bool {
        match self.reseed_pending().or_else(|| self.forked()) {
            Some(reason) => self.reseed(reason).is_ok(),
            None => true,
        }
    }

    /// Sets aside enough of the reseed budget for a stream of `bytes` in chunks of
    /// `chunk_bytes` (each chunk also costs a health-test sample), reseeding first if a reseed
    /// is due, the key expires within [`AGE_MARGIN`], or the unreserved budget is short. Returns
    /// the amount set aside, which the stream passes to [`Managed::fill_reserved`] and gives
    /// back with [`Managed::release`]. Other requests cannot use it: during an entropy outage
    /// they are refused while a prepared stream finishes. A stream longer than one reseed
    /// interval gets what fits and needs a reseed midway.
    ///
    /// # Errors
    /// [`DrbgError::EntropyUnavailable`] when the needed reseed could not get entropy.
    pub fn prepare(&mut self, bytes: u64, chunk_bytes: u64) -> Result<u64, DrbgError> {
        let chunks = bytes.div_ceil(chunk_bytes.max(1));
        let need = bytes.saturating_add((chunks + 1).saturating_mul(SAMPLE_LEN as u64));
        let expiring = Instant::now_without_cache_update() + AGE_MARGIN.into() >= self.deadline;
        match self.reseed_due(0) {
            Some(reason) => self.reseed(reason)?,
            None if expiring => {
                // Early: if it fails, only this stream is refused; the key is still valid, so
                // streams already running and other requests go on until the real deadline.
                let pending = self.pending;
                if let Err(e) = self.reseed(ReseedReason::Age) {
                    self.pending = pending;
                    return Err(e);
                }
            }
            None if self.unreserved(0) < need => self.reseed(ReseedReason::Threshold)?,
            None => {}
        }
        // All reservations together stay below half the base threshold, so every fresh
        // threshold (base or more) leaves at least half of it to everyone else.
        let cap = (self.policy.rekey_after_bytes / 2).saturating_sub(self.reserved);
        let grant = need.min(self.unreserved(0)).min(cap);
        self.reserved += grant;
        Ok(grant)
    }

    /// Gives back what is left of a reservation (a stream that ended or was dropped).
    pub fn release(&mut self, amount: u64) {
        self.reserved = self.reserved.saturating_sub(amount);
    }

    /// Budget a fill may use: all but the reservations of others (`mine` is its own).
    #[inline]
    fn unreserved(&self, mine: u64) -> u64 {
        self.budget.saturating_sub(self.reserved.saturating_sub(mine))
    }

    /// Counts `bytes` of output against the budget and against `mine` first.
    #[inline]
    fn consume(&mut self, bytes: u64, mine: &mut u64) {
        self.budget = self.budget.saturating_sub(bytes);
        let used = bytes.min(*mine);
        *mine -= used;
        self.reserved = self.reserved.saturating_sub(used);
    }

    fn reseed_pending(&self) -> Option<ReseedReason> {
        if self.drbg.is_none() { Some(ReseedReason::Startup) } else { self.pending }
    }

    /// Drops the state, so the next request must instantiate afresh (used after a panic
    /// while the state was borrowed).
    pub fn discard(&mut self) {
        self.drbg = None;
    }

    /// Fills `out`, reseeding first when a threshold, the key age, a fork or `prediction_resistance`
    /// demands it. Requests larger than the remaining byte budget are split around reseeds.
    ///
    /// # Errors
    /// On any error `out` is zeroed and nothing was produced: [`DrbgError::EntropyUnavailable`]
    /// when a due reseed could not get entropy (the generator never serves from a stale state),
    /// [`DrbgError::HealthTestFailed`] when the output failed the continuous test.
    pub fn fill(&mut self, out: &mut [u8], prediction_resistance: bool) -> Result<(), DrbgError> {
        self.fill_reserved(out, prediction_resistance, &mut 0)
    }

    /// [`Managed::fill`] for a stream holding the reservation `mine` (from
    /// [`Managed::prepare`]), which it draws down.
    ///
    /// # Errors
    /// As [`Managed::fill`].
    pub fn fill_reserved(
        &mut self,
        out: &mut [u8],
        prediction_resistance: bool,
        mine: &mut u64,
    ) -> Result<(), DrbgError> {
        let result = self.fill_checked(out, prediction_resistance, mine);
        if result.is_err() {
            out.zeroize();
        }
        result
    }

    fn fill_checked(
        &mut self,
        out: &mut [u8],
        prediction_resistance: bool,
        mine: &mut u64,
    ) -> Result<(), DrbgError> {
        if prediction_resistance {
            self.reseed(ReseedReason::PredictionResistance)?;
        }
        // Canaries: a mechanism that failed to write the buffer leaves zeros where the
        // health test looks (a reused buffer would otherwise show the previous output).
        let len = out.len();
        if len >= SAMPLE_LEN {
            out[..SAMPLE_LEN].fill(0);
            out[len - SAMPLE_LEN..].fill(0);
        } else {
            out.fill(0);
        }
        let mut sample = [0u8; SAMPLE_LEN];
        let mut sampled = false;
        let mut refused = false;
        let mut done = 0;
        while done < out.len() {
            let mut available = self.unreserved(*mine);
            if let Some(reason) = self.reseed_due(*mine) {
                self.reseed(reason)?;
                // A fresh threshold always leaves an unreserved part (reservations are capped at
                // half the base); should it not, spend the budget rather than reseed in a loop.
                available = match self.unreserved(*mine) {
                    0 => self.budget.max(1),
                    n => n,
                };
            }
            let take = (out.len() - done).min(usize::try_from(available).unwrap_or(usize::MAX));
            let drbg = self.drbg.as_mut().ok_or(DrbgError::EntropyUnavailable)?;
            let piece = &mut out[done..done + take];
            // The last piece brings the health test's sample with it (one Generate for both
            // where the mechanism can).
            let generated = if done + take == len {
                drbg.generate_sampled(piece, &mut sample).map(|()| sampled = true)
            } else {
                drbg.generate(piece, &[])
            };
            if generated.is_err() {
                // The mechanism's own reseed interval: reseed, then retry this piece, once. A
                // mechanism that still refuses right after a reseed is broken (an
                // uninstantiated state stays refused): disabled, never retried in a loop.
                if refused {
                    return Err(self.health_failed());
                }
                refused = true;
                self.budget = 0;
                continue;
            }
            refused = false;
            self.consume(take as u64, mine);
            done += take;
        }
        let result = self.check_health(out, sampled.then_some(&sample), mine);
        sample.zeroize();
        result
    }

    /// Whether the process forked or its VM was cloned since the last seed, and which.
    #[inline]
    fn forked(&self) -> Option<ReseedReason> {
        let now = fork::generation();
        if now == self.fork_generation {
            None
        } else if fork::is_vm_change(self.fork_generation, now) {
            Some(ReseedReason::VmFork)
        } else {
            Some(ReseedReason::Fork)
        }
    }

    #[inline]
    fn reseed_due(&self, mine: u64) -> Option<ReseedReason> {
        use ReseedReason::{Age, PredictionResistance, Threshold};
        let pending = self.reseed_pending();
        // A failed threshold or prediction-resistance reseed leaves the state sound, only out
        // of unreserved budget: a stream may still spend what was set aside for it. Any other
        // pending reseed (unseeded, forked, expired) stops everyone.
        let budget_only = matches!(pending, Some(Threshold | PredictionResistance)) && self.drbg.is_some();
        if let Some(reason) = pending
            && !(budget_only && mine > 0)
        {
            Some(reason)
        } else if let Some(reason) = self.forked() {
            Some(reason)
        } else if self.unreserved(mine) == 0 {
            Some(Threshold)
        } else if Instant::now_without_cache_update() >= self.deadline {
            Some(Age)
        } else {
            None
        }
    }

    /// Continuous test on a sample block that is drawn after the output and never served: a
    /// sample equal to the previous call's sample, or all zero, or a served first block that
    /// is all zero, disables the generator. The state keeps only a keyed fingerprint of the
    /// last *sample*, nothing derived from served output, so a state captured later narrows
    /// no token down (the sample is an independent block of the generator's stream; for
    /// CTR_DRBG, the block after the served ones in the same Generate, whose Update then
    /// replaces the key that made both).
    ///
    /// `drawn` is the sample when the last Generate brought it (see [`Drbg::generate_sampled`]);
    /// otherwise (an empty output) it is drawn here.
    fn check_health(
        &mut self,
        out: &[u8],
        drawn: Option<&[u8; SAMPLE_LEN]>,
        mine: &mut u64,
    ) -> Result<(), DrbgError> {
        let zero = |b: &[u8]| b.iter().all(|x| *x == 0);
        // 16-byte windows at both ends (canary-zeroed before generating); outputs of 8 to 15
        // bytes whole (a 12-byte nonce of zeros is as wrong as a 16-byte block of zeros; the
        // false-alarm rate is at most 2^-64).
        let zero_output = if out.len() >= SAMPLE_LEN {
            zero(&out[..SAMPLE_LEN]) || zero(&out[out.len() - SAMPLE_LEN..])
        } else {
            out.len() >= 8 && zero(out)
        };
        if zero_output {
            return Err(self.health_failed());
        }
        let mut sample = [0u8; SAMPLE_LEN];
        if let Some(drawn) = drawn {
            sample = *drawn;
        } else {
            let drbg = self.drbg.as_mut().ok_or(DrbgError::EntropyUnavailable)?;
            if drbg.generate(&mut sample, &[]).is_err() {
                // The mechanism's own reseed interval ended exactly here: reseed on the next
                // call and test then.
                self.budget = 0;
                return Ok(());
            }
        }
        self.consume(SAMPLE_LEN as u64, mine);
        let fingerprint = fingerprint(&sample, self.fingerprint_key);
        let stuck = fingerprint == self.last_fingerprint || zero(&sample);
        sample.zeroize();
        self.last_fingerprint = fingerprint;
        if stuck {
            return Err(self.health_failed());
        }
        Ok(())
    }

    #[cold]
    fn health_failed(&mut self) -> DrbgError {
        self.drbg = None;
        self.stats.health_failed(G::ALGORITHM);
        DrbgError::HealthTestFailed
    }

    /// Draws fresh entropy and reseeds (or instantiates), then draws the next jittered
    /// threshold from the generator itself.
    #[cold]
    #[inline(never)]
    fn reseed(&mut self, reason: ReseedReason) -> Result<(), DrbgError> {
        // A span of the OpenTelemetry traces (the telemetry module's target; this module
        // stays free of it): a reseed on a request's path shows inside its trace.
        let _span = tracing::info_span!(target: "drbgd::trace", "reseed", drbgd.alg = G::ALGORITHM.name(), drbgd.reason = reason.name()).entered();
        // The generation is read before the entropy: a VM snapshot taken in between and
        // restored twice then leaves both clones with the older generation, so each reseeds
        // again on its next output (read after, both would record the new one and share the
        // pre-snapshot entropy).
        let generation = fork::generation();
        let mut entropy = [0u8; 64];
        let seed_len = G::ENTROPY_LEN + G::NONCE_LEN;
        if self.entropy.fill(&mut entropy[..seed_len]).is_err() {
            entropy.zeroize();
            self.pending = Some(reason);
            self.stats.reseed_failed(G::ALGORITHM);
            return Err(DrbgError::EntropyUnavailable);
        }
        let context = self.reseed_context(reason, generation);
        let (input, nonce) = entropy[..seed_len].split_at(G::ENTROPY_LEN);
        let drbg = match &mut self.drbg {
            Some(drbg) => {
                drbg.reseed(input, &context);
                drbg
            }
            None => self.drbg.insert(G::instantiate(input, nonce, &self.personalization)),
        };
        entropy.zeroize();
        let mut r = [0u8; 8];
        // A fresh reseed cannot hit the mechanism's reseed interval.
        let _ = drbg.generate(&mut r, &[]);
        self.budget = self.policy.threshold(u64::from_le_bytes(r));
        r.zeroize();
        self.deadline = Instant::now_without_cache_update() + self.policy.rekey_after.into();
        self.fork_generation = generation;
        self.pending = None;
        self.reseeds += 1;
        self.stats.reseeded(G::ALGORITHM, reason);
        Ok(())
    }

    /// Additional input for a reseed: reason, pid, fork generation and reseed count, so a
    /// child that reseeds after fork mixes in its own identity even if entropy repeated.
    fn reseed_context(&self, reason: ReseedReason, generation: u64) -> [u8; 32] {
        let mut ctx = [0u8; 32];
        ctx[..8].copy_from_slice(&(reason.index() as u64).to_le_bytes());
        ctx[8..16].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
        ctx[16..24].copy_from_slice(&generation.to_le_bytes());
        ctx[24..].copy_from_slice(&self.reseeds.to_le_bytes());
        ctx
    }
}

/// A per-instance random key for [`fingerprint`] (std's SipHash keys come from the OS).
fn fingerprint_key() -> [u64; 2] {
    use std::hash::{BuildHasher, RandomState};
    let state = RandomState::new();
    [state.hash_one(0u8), state.hash_one(1u8)]
}

/// A 128-to-64-bit keyed fingerprint (one widening multiply, as in wyhash): equal blocks
/// always collide, distinct ones with probability about 2^-64, and each fingerprint leaves
/// 2^64 candidate blocks. The clock check and this test are the whole per-request overhead,
/// so both are kept to a few nanoseconds (SipHash here cost 30 ns per request).
#[inline]
fn fingerprint(block: &[u8; SAMPLE_LEN], key: [u64; 2]) -> u64 {
    let (lo, hi) = block.split_at(8);
    let lo = u64::from_le_bytes(lo.try_into().unwrap_or_default()) ^ key[0];
    let hi = u64::from_le_bytes(hi.try_into().unwrap_or_default()) ^ key[1];
    let product = u128::from(lo) * u128::from(hi);
    (product as u64) ^ ((product >> 64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drbg::chacha20::ChaCha20Drbg;
    use crate::drbg::entropy::{OsEntropy, ScriptedEntropy};
    use crate::drbg::{Algorithm, ReseedReason, ReseedRequired};

    fn managed<G: Drbg>(source: Arc<dyn EntropySource>, policy: ReseedPolicy) -> (Managed<G>, Arc<Stats>) {
        let stats = Arc::new(Stats::default());
        let m = Managed::<G>::new(source, stats.clone(), Arc::from(&b"test"[..]), policy).unwrap();
        (m, stats)
    }

    #[test]
    fn jittered_threshold_stays_in_base_to_twice_base() {
        let p = ReseedPolicy { rekey_after_bytes: 1000, ..ReseedPolicy::default() };
        for r in [0, 1, 999, 1000, u64::MAX] {
            let t = p.threshold(r);
            assert!((1000..2000).contains(&t), "{t}");
        }
        let fixed = ReseedPolicy { jitter: false, ..p };
        assert_eq!(fixed.threshold(12345), 1000);
    }

    #[test]
    fn reseeds_at_byte_threshold() {
        let policy = ReseedPolicy { rekey_after_bytes: 4096, jitter: false, ..ReseedPolicy::default() };
        let (mut m, stats) = managed::<ChaCha20Drbg>(Arc::new(OsEntropy), policy);
        let mut buf = vec![0u8; 4096 * 10];
        m.fill(&mut buf, false).unwrap();
        // 40 KiB at 4 KiB per interval: the first interval came from instantiation.
        assert_eq!(stats.reseeds(Algorithm::ChaCha20, ReseedReason::Threshold), 9);
        assert_eq!(stats.reseeds(Algorithm::ChaCha20, ReseedReason::Startup), 1);
    }

    #[test]
    fn jitter_varies_the_interval() {
        let policy = ReseedPolicy { rekey_after_bytes: 4096, ..ReseedPolicy::default() };
        let (mut m, stats) = managed::<ChaCha20Drbg>(Arc::new(OsEntropy), policy);
        let mut buf = vec![0u8; 4096 * 100];
        m.fill(&mut buf, false).unwrap();
        let n = stats.reseeds(Algorithm::ChaCha20, ReseedReason::Threshold);
        // Mean interval 1.5 x base: about 66 reseeds, never 99 (no jitter) nor below 49.
        assert!((50..99).contains(&n), "{n}");
    }

    #[test]
    fn age_and_prediction_resistance_reseed() {
        let policy = ReseedPolicy { rekey_after: Duration::ZERO, ..ReseedPolicy::default() };
        let (mut m, stats) = managed::<ChaCha20Drbg>(Arc::new(OsEntropy), policy);
        let mut buf = [0u8; 32];
        m.fill(&mut buf, false).unwrap();
        m.fill(&mut buf, true).unwrap();
        assert!(stats.reseeds(Algorithm::ChaCha20, ReseedReason::Age) >= 1);
        assert_eq!(stats.reseeds(Algorithm::ChaCha20, ReseedReason::PredictionResistance), 1);
    }

    #[test]
    fn entropy_failure_refuses_and_recovers() {
        let source = Arc::new(ScriptedEntropy::default());
        let (mut m, stats) = managed::<ChaCha20Drbg>(source.clone(), ReseedPolicy::default());
        source.set_failing(true);
        let mut buf = [0xAAu8; 64];
        assert_eq!(m.fill(&mut buf, true), Err(DrbgError::EntropyUnavailable));
        assert_eq!(buf, [0u8; 64], "nothing is handed out on failure");
        assert_eq!(stats.reseed_failures(Algorithm::ChaCha20), 1);
        // Fail closed: without prediction resistance it still refuses until a reseed works.
        assert_eq!(m.fill(&mut buf, false), Err(DrbgError::EntropyUnavailable));
        assert!(!m.ready());
        source.set_failing(false);
        assert!(m.ready());
        m.fill(&mut buf, false).unwrap();
        assert_ne!(buf, [0u8; 64]);
        assert_eq!(stats.reseeds(Algorithm::ChaCha20, ReseedReason::PredictionResistance), 1);
    }

    #[test]
    fn instantiation_fails_closed() {
        let stats = Arc::new(Stats::default());
        let r = Managed::<ChaCha20Drbg>::new(
            Arc::new(ScriptedEntropy::failing()),
            stats,
            Arc::from(&b""[..]),
            ReseedPolicy::default(),
        );
        assert_eq!(r.err(), Some(DrbgError::EntropyUnavailable));
    }

    /// A broken mechanism that always outputs the same bytes.
    #[derive(Debug)]
    struct Stuck;
    impl Drbg for Stuck {
        const ALGORITHM: Algorithm = Algorithm::Blake3;
        const ENTROPY_LEN: usize = 32;
        const NONCE_LEN: usize = 16;
        fn instantiate(_: &[u8], _: &[u8], _: &[u8]) -> Self {
            Stuck
        }
        fn reseed(&mut self, _: &[u8], _: &[u8]) {}
        fn generate(&mut self, out: &mut [u8], _: &[u8]) -> Result<(), ReseedRequired> {
            out.fill(0x5a);
            Ok(())
        }
    }

    #[test]
    fn repeated_block_fails_health_test() {
        let (mut m, stats) = managed::<Stuck>(Arc::new(OsEntropy), ReseedPolicy::default());
        let mut buf = [0u8; 32];
        m.fill(&mut buf, false).unwrap();
        assert_eq!(m.fill(&mut buf, false), Err(DrbgError::HealthTestFailed));
        assert_eq!(buf, [0u8; 32]);
        assert_eq!(m.reseed_pending(), Some(ReseedReason::Startup));
        assert_eq!(stats.health_failures(Algorithm::Blake3), 1);
    }

    #[test]
    fn state_keeps_nothing_derived_from_served_output() {
        let (mut m, _) = managed::<ChaCha20Drbg>(Arc::new(OsEntropy), ReseedPolicy::default());
        for len in [16, 32, 64, 4096] {
            let mut out = vec![0u8; len];
            m.fill(&mut out, false).unwrap();
            let served = fingerprint(out.first_chunk().unwrap(), m.fingerprint_key);
            assert_ne!(m.last_fingerprint, served, "the state fingerprints served output");
        }
    }

    #[test]
    fn all_zero_output_fails_health_test() {
        /// A mechanism whose output is zero but whose later blocks differ.
        #[derive(Debug)]
        struct ZeroFirst(u8);
        impl Drbg for ZeroFirst {
            const ALGORITHM: Algorithm = Algorithm::Blake3;
            const ENTROPY_LEN: usize = 32;
            const NONCE_LEN: usize = 16;
            fn instantiate(_: &[u8], _: &[u8], _: &[u8]) -> Self {
                ZeroFirst(0)
            }
            fn reseed(&mut self, _: &[u8], _: &[u8]) {}
            fn generate(&mut self, out: &mut [u8], _: &[u8]) -> Result<(), ReseedRequired> {
                self.0 = self.0.wrapping_add(1);
                out.fill(if out.len() == SAMPLE_LEN { self.0 } else { 0 });
                Ok(())
            }
        }
        let (mut m, stats) = managed::<ZeroFirst>(Arc::new(OsEntropy), ReseedPolicy::default());
        let mut buf = [0u8; 32];
        assert_eq!(m.fill(&mut buf, false), Err(DrbgError::HealthTestFailed));
        assert_eq!(stats.health_failures(Algorithm::Blake3), 1);
    }

    #[test]
    fn prepare_reseeds_only_when_the_budget_is_short() {
        let policy = ReseedPolicy { rekey_after_bytes: 4096, jitter: false, ..ReseedPolicy::default() };
        let (mut m, stats) = managed::<ChaCha20Drbg>(Arc::new(OsEntropy), policy);
        let grant = m.prepare(1000, 100).unwrap();
        assert_eq!(
            grant,
            1000 + 11 * SAMPLE_LEN as u64,
            "the output plus one sample per chunk and one spare"
        );
        assert_eq!(stats.reseeds(Algorithm::ChaCha20, ReseedReason::Threshold), 0, "budget suffices");
        m.release(grant);
        m.fill(&mut [0u8; 3000], false).unwrap();
        m.prepare(2000, 2000).unwrap();
        assert_eq!(stats.reseeds(Algorithm::ChaCha20, ReseedReason::Threshold), 1, "reseeded ahead");
    }

    /// A prepared stream finishes during an entropy outage even while other requests on the
    /// same shard exhaust everything else: they are refused, the stream is not.
    #[test]
    fn a_reservation_is_kept_for_its_stream() {
        let policy = ReseedPolicy { rekey_after_bytes: 8192, jitter: false, ..ReseedPolicy::default() };
        let source = Arc::new(ScriptedEntropy::default());
        let (mut m, _) = managed::<ChaCha20Drbg>(source.clone(), policy);
        let mut mine = m.prepare(3600, 400).unwrap();
        source.set_failing(true);
        let mut others = 0;
        while m.fill(&mut [0u8; 32], false).is_ok() {
            others += 1;
        }
        assert!(others > 50 && others < 100, "{others} other fills before the unreserved budget ran out");
        for _ in 0..9 {
            m.fill_reserved(&mut [0u8; 400], false, &mut mine).unwrap();
        }
        assert!(mine < 400, "{mine} left");
        m.release(mine);
        assert_eq!(m.fill(&mut [0u8; 32], false), Err(DrbgError::EntropyUnavailable));
        assert_eq!(m.prepare(100, 100), Err(DrbgError::EntropyUnavailable), "no budget left to set aside");
        source.set_failing(false);
        m.fill(&mut [0u8; 32], false).unwrap();
    }

    /// A stream asking for more than the whole budget gets at most half the base, so the next
    /// ordinary fill on the shard still has budget after one reseed (no reseed loop), also
    /// without jitter.
    #[test]
    fn reservations_never_starve_other_requests() {
        let policy = ReseedPolicy { rekey_after_bytes: 8192, jitter: false, ..ReseedPolicy::default() };
        let (mut m, stats) = managed::<ChaCha20Drbg>(Arc::new(OsEntropy), policy);
        let first = m.prepare(1 << 20, 4096).unwrap();
        assert_eq!(first, 4096, "capped at half the base threshold");
        assert_eq!(m.prepare(1 << 20, 4096).unwrap(), 0, "the cap is for all streams together");
        let before = stats.reseeds(Algorithm::ChaCha20, ReseedReason::Threshold);
        m.fill(&mut [0u8; 16 * 1024], false).unwrap();
        let reseeds = stats.reseeds(Algorithm::ChaCha20, ReseedReason::Threshold) - before;
        assert!(reseeds <= 5, "{reseeds} reseeds for 16 KiB at 4 KiB unreserved each");
    }

    #[test]
    fn a_failed_early_age_reseed_refuses_only_the_new_stream() {
        let policy = ReseedPolicy { rekey_after: Duration::from_secs(3), ..ReseedPolicy::default() };
        let source = Arc::new(ScriptedEntropy::default());
        let (mut m, _) = managed::<ChaCha20Drbg>(source.clone(), policy);
        source.set_failing(true);
        assert_eq!(m.prepare(1000, 1000), Err(DrbgError::EntropyUnavailable), "key expires within 5 s");
        m.fill(&mut [0u8; 32], false).expect("the key is still valid for everyone else");
    }

    #[test]
    fn short_all_zero_outputs_fail_the_health_test() {
        /// Writes only its health samples: the caller's buffer keeps the canary zeros.
        #[derive(Debug)]
        struct Lazy(u8);
        impl Drbg for Lazy {
            const ALGORITHM: Algorithm = Algorithm::Blake3;
            const ENTROPY_LEN: usize = 32;
            const NONCE_LEN: usize = 16;
            fn instantiate(_: &[u8], _: &[u8], _: &[u8]) -> Self {
                Lazy(0)
            }
            fn reseed(&mut self, _: &[u8], _: &[u8]) {}
            fn generate(&mut self, out: &mut [u8], _: &[u8]) -> Result<(), ReseedRequired> {
                self.0 = self.0.wrapping_add(1);
                if out.len() == SAMPLE_LEN || out.len() == 8 {
                    out.fill(self.0);
                }
                Ok(())
            }
        }
        let (mut m, _) = managed::<Lazy>(Arc::new(OsEntropy), ReseedPolicy::default());
        let mut nonce = [0xAAu8; 12];
        assert_eq!(m.fill(&mut nonce, false), Err(DrbgError::HealthTestFailed));
    }

    #[test]
    fn debug_shows_no_secret() {
        let (m, _) = managed::<ChaCha20Drbg>(Arc::new(OsEntropy), ReseedPolicy::default());
        let s = format!("{m:?}");
        assert!(s.contains("Managed") && s.contains("ChaCha20") && !s.contains("fingerprint"));
    }
}
