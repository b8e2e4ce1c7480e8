//! Per-core shards. Every algorithm has one managed instance per shard; a thread keeps to the
//! shard it was given on first use, so the hot path takes only its own shard's uncontended
//! lock and two threads do not contend in the common case.
//!
//! The instances of one algorithm sit together in dump-excluded, locked-where-possible pages
//! ([`SecretSlice`]), each on cache lines of its own. The pool holds them behind one small
//! trait (`Instances`), built for each algorithm's mechanism type through
//! [`Algorithm::with_mechanism`], so nothing here lists the algorithms. An algorithm that failed
//! its start-up self-tests ([`PoolConfig::withheld`]) gets no instances: every call for it is
//! refused, so no layer above can be served by it.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use super::algorithm::WithMechanism;
use super::algorithm_id::Algorithm;
use super::entropy::EntropySource;
use super::generator::{Drbg, DrbgError};
use super::reseed::{Managed, ReseedPolicy};
use super::secret_mem::{Protection, SecretSlice};
use super::stats::Stats;

/// How to build a [`Pool`].
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Number of shards (at least 1); default: the available cores.
    pub shards: usize,
    /// Reseed policy per algorithm, indexed by [`Algorithm::index`].
    pub policies: [ReseedPolicy; Algorithm::COUNT],
    /// Instance label mixed into every personalization string (host name, pod name, ...).
    pub instance: String,
    /// Algorithms that failed their start-up self-tests: never instantiated, every fill
    /// refused with [`DrbgError::SelfTestFailed`], never ready.
    pub withheld: Vec<Algorithm>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            shards: std::thread::available_parallelism().map_or(1, |n| n.get()),
            policies: [ReseedPolicy::default(); Algorithm::COUNT],
            instance: String::new(),
            withheld: Vec::new(),
        }
    }
}

/// One algorithm's managed generator on every shard, whatever the mechanism type.
trait Instances: Send + Sync {
    /// Fills `out` from the instance of `shard`.
    fn fill(&self, shard: usize, out: &mut [u8], prediction_resistance: bool) -> Result<(), DrbgError>;
    /// See [`Managed::fill_reserved`].
    fn fill_reserved(&self, shard: usize, out: &mut [u8], pr: bool, mine: &mut u64) -> Result<(), DrbgError>;
    /// See [`Managed::prepare`].
    fn prepare(&self, shard: usize, bytes: u64, chunk_bytes: u64) -> Result<u64, DrbgError>;
    /// See [`Managed::release`].
    fn release(&self, shard: usize, amount: u64);
    /// Whether every shard's instance can serve (see [`Managed::ready`]).
    fn all_ready(&self) -> bool;
    /// What the kernel granted for these instances' pages.
    fn protection(&self) -> Protection;
    /// `Err` if the algorithm is withheld (see [`Pool::serves`]).
    fn serves(&self) -> Result<(), DrbgError> {
        Ok(())
    }
}

/// Keeps a value on cache lines of its own (128 bytes: two 64-byte lines, as the adjacent-line
/// prefetcher fetches them in pairs), so two shards' locks and state never share a line.
#[repr(align(128))]
struct CacheLines<T>(T);

/// The instances of mechanism `G`, indexed by shard.
struct Shards<G: Drbg>(SecretSlice<CacheLines<Mutex<Managed<G>>>>);

impl<G: Drbg> Instances for Shards<G> {
    fn fill(&self, shard: usize, out: &mut [u8], prediction_resistance: bool) -> Result<(), DrbgError> {
        lock(&self.0[shard].0).fill(out, prediction_resistance)
    }

    fn fill_reserved(&self, shard: usize, out: &mut [u8], pr: bool, mine: &mut u64) -> Result<(), DrbgError> {
        lock(&self.0[shard].0).fill_reserved(out, pr, mine)
    }

    fn prepare(&self, shard: usize, bytes: u64, chunk_bytes: u64) -> Result<u64, DrbgError> {
        lock(&self.0[shard].0).prepare(bytes, chunk_bytes)
    }

    fn release(&self, shard: usize, amount: u64) {
        lock(&self.0[shard].0).release(amount);
    }

    fn all_ready(&self) -> bool {
        self.0.iter().fold(true, |all, slot| lock(&slot.0).ready() & all)
    }

    fn protection(&self) -> Protection {
        self.0.protection()
    }
}

/// An algorithm withheld for a failed start-up self-test: no state, every call refused.
struct Withheld(Algorithm);

impl Instances for Withheld {
    fn fill(&self, _: usize, out: &mut [u8], _: bool) -> Result<(), DrbgError> {
        out.fill(0);
        Err(DrbgError::SelfTestFailed(self.0))
    }

    fn fill_reserved(&self, _: usize, out: &mut [u8], _: bool, _: &mut u64) -> Result<(), DrbgError> {
        out.fill(0);
        Err(DrbgError::SelfTestFailed(self.0))
    }

    fn prepare(&self, _: usize, _: u64, _: u64) -> Result<u64, DrbgError> {
        Err(DrbgError::SelfTestFailed(self.0))
    }

    fn release(&self, _: usize, _: u64) {}

    fn all_ready(&self) -> bool {
        false
    }

    /// No generator state, so no pages to protect.
    fn protection(&self) -> Protection {
        Protection { dontdump: true, locked: true }
    }

    fn serves(&self) -> Result<(), DrbgError> {
        Err(DrbgError::SelfTestFailed(self.0))
    }
}

/// Builds one algorithm's [`Shards`] for its mechanism type.
#[derive(Clone, Copy)]
struct Build<'a> {
    config: &'a PoolConfig,
    entropy: &'a Arc<dyn EntropySource>,
    stats: &'a Arc<Stats>,
}

impl WithMechanism for Build<'_> {
    type Output = Result<Box<dyn Instances>, DrbgError>;

    fn run<G: Drbg>(self) -> Self::Output {
        let alg = G::ALGORITHM;
        if self.config.withheld.contains(&alg) {
            return Ok(Box::new(Withheld(alg)));
        }
        let slots = SecretSlice::try_from_fn(self.config.shards.max(1), |shard| {
            let label = personalization(alg, shard, &self.config.instance);
            let policy = self.config.policies[alg.index()];
            Managed::<G>::new(self.entropy.clone(), self.stats.clone(), label, policy)
                .map(|m| CacheLines(Mutex::new(m)))
        })?;
        Ok(Box::new(Shards(slots)))
    }
}

/// The sharded generator pool.
pub struct Pool {
    /// Indexed by [`Algorithm::index`] (built from [`Algorithm::ALL`], so every index is
    /// present).
    algorithms: Box<[Box<dyn Instances>]>,
    shards: usize,
    stats: Arc<Stats>,
    /// The source every generator reseeds from, probed by [`Pool::all_ready`].
    entropy: Arc<dyn EntropySource>,
    /// The last probe of `entropy`: when, and whether it answered.
    last_probe: Mutex<Option<(coarsetime::Instant, bool)>>,
}

/// Readiness probes the entropy source at most this often: an outage shows within a second,
/// and frequent pollers (the gRPC health follower polls every 250 ms) cost one `getrandom` per
/// second, not one per poll.
const PROBE_INTERVAL: coarsetime::Duration = coarsetime::Duration::from_secs(1);

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("shards", &self.shards).finish_non_exhaustive()
    }
}

/// Next shard ticket; a thread takes one on first use.
static NEXT_TICKET: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static TICKET: Cell<Option<usize>> = const { Cell::new(None) };
}

fn thread_ticket() -> usize {
    TICKET.with(|t| match t.get() {
        Some(ticket) => ticket,
        None => {
            let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
            t.set(Some(ticket));
            ticket
        }
    })
}

impl Pool {
    /// Seeds every generator of every shard from `entropy`.
    ///
    /// # Errors
    /// [`DrbgError::EntropyUnavailable`] if any instantiation could not get entropy.
    pub fn new(config: &PoolConfig, entropy: Arc<dyn EntropySource>) -> Result<Self, DrbgError> {
        let stats = Arc::new(Stats::default());
        let build = Build { config, entropy: &entropy, stats: &stats };
        let algorithms = Algorithm::ALL
            .into_iter()
            .map(|alg| alg.with_mechanism(build))
            .collect::<Result<Box<[_]>, DrbgError>>()?;
        Ok(Pool { algorithms, shards: config.shards.max(1), stats, entropy, last_probe: Mutex::new(None) })
    }

    /// What the kernel granted for the generator state's pages (the weakest over all shards):
    /// excluded from core dumps, locked against swap.
    pub fn protection(&self) -> Protection {
        self.algorithms.iter().map(|a| a.protection()).fold(
            Protection { dontdump: true, locked: true },
            |a, b| Protection { dontdump: a.dontdump && b.dontdump, locked: a.locked && b.locked },
        )
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards
    }

    /// Lifecycle counters of all shards.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Fills `out` from the calling thread's shard.
    ///
    /// # Errors
    /// See [`Managed::fill`]; on error `out` is zeroed.
    #[inline]
    pub fn fill(&self, alg: Algorithm, out: &mut [u8], prediction_resistance: bool) -> Result<(), DrbgError> {
        let shard = thread_ticket() % self.shards;
        self.fill_on_shard(shard, alg, out, prediction_resistance)
    }

    /// Whether `alg` is served at all: a check that draws nothing, for a caller that must refuse
    /// before it answers (a stream's headers go out before its first fill).
    ///
    /// # Errors
    /// [`DrbgError::SelfTestFailed`] if `alg` is withheld ([`PoolConfig::withheld`]).
    pub fn serves(&self, alg: Algorithm) -> Result<(), DrbgError> {
        self.algorithms[alg.index()].serves()
    }

    /// The shard of the calling thread (a stream keeps to the shard it started on).
    pub fn current_shard(&self) -> usize {
        thread_ticket() % self.shards
    }

    /// Sets aside the reseed budget of a stream of `bytes` in `chunk_bytes` chunks on
    /// `shard`, reseeding first if needed (see [`Managed::prepare`]); returns the reservation.
    ///
    /// # Errors
    /// [`DrbgError::EntropyUnavailable`] if that reseed failed.
    ///
    /// # Panics
    /// If `shard >= shard_count()`.
    pub fn prepare_on_shard(
        &self,
        shard: usize,
        alg: Algorithm,
        bytes: u64,
        chunk_bytes: u64,
    ) -> Result<u64, DrbgError> {
        self.algorithms[alg.index()].prepare(shard, bytes, chunk_bytes)
    }

    /// [`Pool::fill_on_shard`] for a stream drawing down its reservation `mine`.
    ///
    /// # Errors
    /// See [`Managed::fill`].
    ///
    /// # Panics
    /// If `shard >= shard_count()`.
    pub fn fill_reserved_on_shard(
        &self,
        shard: usize,
        alg: Algorithm,
        out: &mut [u8],
        prediction_resistance: bool,
        mine: &mut u64,
    ) -> Result<(), DrbgError> {
        self.algorithms[alg.index()].fill_reserved(shard, out, prediction_resistance, mine)
    }

    /// Gives back what is left of a stream's reservation.
    ///
    /// # Panics
    /// If `shard >= shard_count()`.
    pub fn release_on_shard(&self, shard: usize, alg: Algorithm, amount: u64) {
        if amount > 0 {
            self.algorithms[alg.index()].release(shard, amount);
        }
    }

    /// Fills `out` from shard `shard` (streams, tests and benchmarks).
    ///
    /// # Errors
    /// See [`Managed::fill`].
    ///
    /// # Panics
    /// If `shard >= shard_count()`.
    pub fn fill_on_shard(
        &self,
        shard: usize,
        alg: Algorithm,
        out: &mut [u8],
        prediction_resistance: bool,
    ) -> Result<(), DrbgError> {
        self.algorithms[alg.index()].fill(shard, out, prediction_resistance)
    }

    /// Whether every generator of every shard can serve and reseed: the entropy source answers
    /// a probe (so an outage shows at once, before any reseed falls due), and generators
    /// waiting for a reseed (entropy failure, health-test failure) try it now. Never while an
    /// algorithm is withheld ([`PoolConfig::withheld`]).
    pub fn all_ready(&self) -> bool {
        let entropy_ok = self.probe_entropy();
        let generators_ok = self.algorithms.iter().fold(true, |all, a| a.all_ready() & all);
        entropy_ok && generators_ok
    }
}

impl Pool {
    /// Whether the entropy source answers, asking it at most once per [`PROBE_INTERVAL`]. A
    /// failed probe is not cached: the next call asks again, so healing shows at once.
    fn probe_entropy(&self) -> bool {
        let mut last = self.last_probe.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = coarsetime::Instant::now_without_cache_update();
        if let Some((at, true)) = *last
            && now.duration_since(at) < PROBE_INTERVAL
        {
            return true;
        }
        let mut probe = [0u8; 16];
        let ok = self.entropy.fill(&mut probe).is_ok();
        zeroize::Zeroize::zeroize(&mut probe);
        *last = Some((now, ok));
        ok
    }
}

/// Bytes a [`Words`] fetches from the pool at a time.
const WORDS_BUFFER: usize = 512;

/// Buffered 64-bit words from one algorithm of the pool, for samplers that consume a word at a
/// time ([`super::uniform::UniformI64`]). Fallible: a failed refill is returned at once, so no
/// caller ever sees a placeholder word. Each word is wiped from the buffer as it leaves, and the
/// rest on drop.
pub struct Words<'a> {
    pool: &'a Pool,
    alg: Algorithm,
    buf: [u8; WORDS_BUFFER],
    /// Next unread byte; `WORDS_BUFFER` means empty.
    pos: usize,
}

impl Pool {
    /// A buffered word source drawing from `alg` on the calling thread's shard.
    pub fn words(&self, alg: Algorithm) -> Words<'_> {
        Words { pool: self, alg, buf: [0u8; WORDS_BUFFER], pos: WORDS_BUFFER }
    }
}

impl Words<'_> {
    /// The next word.
    ///
    /// # Errors
    /// See [`Pool::fill`]: the generator refused (entropy outage, health-test failure). The
    /// buffer stays empty, so a later call asks the pool again.
    #[inline]
    pub fn next_u64(&mut self) -> Result<u64, DrbgError> {
        if self.pos + 8 > WORDS_BUFFER {
            self.pool.fill(self.alg, &mut self.buf, false)?;
            self.pos = 0;
        }
        let word = &mut self.buf[self.pos..self.pos + 8];
        let value = u64::from_le_bytes(word.try_into().unwrap_or_default());
        zeroize::Zeroize::zeroize(word);
        self.pos += 8;
        Ok(value)
    }
}

impl Drop for Words<'_> {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.buf);
    }
}

/// Locks a generator. A lock poisoned by a panic mid-generate may hold a half-updated state,
/// so that state is discarded and re-instantiated on next use.
fn lock<G: Drbg>(m: &Mutex<Managed<G>>) -> MutexGuard<'_, Managed<G>> {
    m.lock().unwrap_or_else(|poisoned| {
        let mut guard = poisoned.into_inner();
        guard.discard();
        m.clear_poison();
        guard
    })
}

/// The personalization string of one generator: algorithm, shard, pid, start time, host and
/// instance label. No two generators, shards, processes or pods share one.
fn personalization(alg: Algorithm, shard: usize, instance: &str) -> Arc<[u8]> {
    let start = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let label = format!(
        "drbgd/1 alg={} shard={} pid={} start_ns={} host={} instance={}",
        alg.name(),
        shard,
        std::process::id(),
        start,
        host.trim(),
        instance
    );
    Arc::from(label.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drbg::entropy::OsEntropy;

    #[test]
    fn shards_give_distinct_streams() {
        let pool =
            Pool::new(&PoolConfig { shards: 3, ..PoolConfig::default() }, Arc::new(OsEntropy)).unwrap();
        for alg in Algorithm::ALL {
            let outs: Vec<[u8; 32]> = (0..3)
                .map(|s| {
                    let mut b = [0u8; 32];
                    pool.fill_on_shard(s, alg, &mut b, false).unwrap();
                    b
                })
                .collect();
            assert!(outs[0] != outs[1] && outs[1] != outs[2] && outs[0] != outs[2]);
        }
        assert!(pool.all_ready());
        #[cfg(target_os = "linux")]
        assert!(pool.protection().dontdump);
    }

    #[test]
    fn words_fail_at_once_when_the_generator_refuses() {
        let source = Arc::new(crate::drbg::entropy::ScriptedEntropy::default());
        let pool = Pool::new(&PoolConfig { shards: 1, ..PoolConfig::default() }, source.clone()).unwrap();
        let mut words = pool.words(Algorithm::Aes256Ctr);
        let first = words.next_u64().unwrap();
        source.set_failing(true);
        // Prediction resistance forces a reseed, which fails: the generator now refuses until a
        // reseed succeeds, and the buffered words are the only ones left.
        assert!(pool.fill(Algorithm::Aes256Ctr, &mut [0u8; 8], true).is_err());
        let buffered = (WORDS_BUFFER - 8) / 8;
        for _ in 0..buffered {
            words.next_u64().unwrap();
        }
        assert_eq!(words.next_u64(), Err(DrbgError::EntropyUnavailable));
        assert_eq!(words.next_u64(), Err(DrbgError::EntropyUnavailable));
        source.set_failing(false);
        assert_ne!(words.next_u64().unwrap(), first);
    }

    #[test]
    fn a_withheld_algorithm_is_refused_everywhere_and_never_ready() {
        let config = PoolConfig { shards: 2, withheld: vec![Algorithm::HmacSha256], ..PoolConfig::default() };
        let pool = Pool::new(&config, Arc::new(OsEntropy)).unwrap();
        let refused = Err(DrbgError::SelfTestFailed(Algorithm::HmacSha256));
        let mut out = [0xAAu8; 32];
        assert_eq!(pool.fill(Algorithm::HmacSha256, &mut out, false), refused);
        assert_eq!(out, [0u8; 32], "nothing handed out");
        assert_eq!(pool.prepare_on_shard(1, Algorithm::HmacSha256, 100, 100).map(drop), refused);
        assert_eq!(pool.fill_reserved_on_shard(1, Algorithm::HmacSha256, &mut out, true, &mut 64), refused);
        assert_eq!(pool.words(Algorithm::HmacSha256).next_u64().map(drop), refused);
        assert_eq!(pool.serves(Algorithm::HmacSha256), refused);
        assert_eq!(pool.serves(Algorithm::HmacSha512), Ok(()));
        assert!(!pool.all_ready());
        pool.fill(Algorithm::HmacSha512, &mut out, false).unwrap();
        assert_ne!(out, [0u8; 32], "the others serve");
    }

    #[test]
    fn threads_keep_their_shard() {
        let first = thread_ticket();
        assert_eq!(thread_ticket(), first);
        let other = std::thread::spawn(thread_ticket).join().unwrap();
        assert_ne!(other, first);
    }

    #[test]
    fn personalization_is_distinct() {
        let a = personalization(Algorithm::ChaCha20, 0, "pod-a");
        let b = personalization(Algorithm::ChaCha20, 1, "pod-a");
        let c = personalization(Algorithm::Blake3, 0, "pod-a");
        assert!(a != b && a != c);
        assert!(std::str::from_utf8(&a).unwrap().contains("instance=pod-a"));
    }
}
