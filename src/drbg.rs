//! The DRBG domain: algorithms, the generator trait, bit strings, seeding and the shard pool.
//!
//! Nothing in here knows about HTTP, gRPC or tokio. The only I/O is the OS entropy source
//! behind [`entropy::EntropySource`].
//!
//! Layout:
//! - [`ctr_drbg`]: NIST SP 800-90A CTR_DRBG (AES, with and without the derivation function).
//! - [`chacha20`] and [`blake3_xof`]: keystream generators behind the shared
//!   fast-key-erasure buffer of [`fke`].
//! - [`reseed`]: thresholds (bytes with arc4random-style jitter, age), prediction resistance,
//!   fork detection and the continuous health test around any [`Drbg`].
//! - [`fork`]: the fork generation counter (`unsafe`, with `randen::aesni` and `secret_mem`).
//! - [`secret_mem`]: dump-excluded, locked pages for the generator state.
//! - [`entropy`]: where seed material comes from.
//! - [`pool`]: per-core shards, each holding one managed instance of every algorithm.
//! - [`randen`]: Randen (Abseil's engine, verified against its goldens) as a fourth generator;
//!   its AES-NI permutation is the other `unsafe`.
//! - [`bits`]: packing and counting of bit strings.
//! - [`uniform`]: unbiased integers on a range from a fallible word source.
//! - [`selftest`]: the known-answer and round-trip start-up tests.

pub mod bits;
pub mod blake3_xof;
pub mod chacha20;
pub mod ctr_drbg;
pub mod entropy;
pub mod fke;
pub mod fork;
pub mod pool;
pub mod randen;
mod randen_keys;
pub mod reseed;
pub mod secret_mem;
pub mod selftest;
pub mod stats;
pub mod uniform;

use std::fmt;
use std::str::FromStr;

pub use pool::{Pool, PoolConfig};
pub use reseed::{ReseedPolicy, ReseedReason};

/// The generator algorithms drbgd serves. The canonical names are used by the API, the
/// metrics labels and the config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// ChaCha20 (20 rounds) with fast key erasure.
    ChaCha20,
    /// NIST SP 800-90A CTR_DRBG with AES-256 and the derivation function.
    Aes256Ctr,
    /// Keyed BLAKE3 in extendable-output mode with fast key erasure.
    Blake3,
    /// Randen: an AES-round Feistel sponge; fast, backtracking-resistant, not a NIST design.
    Randen,
    /// NIST SP 800-90A CTR_DRBG with AES-128 and the derivation function.
    Aes128Ctr,
    /// NIST SP 800-90A CTR_DRBG with AES-192 and the derivation function.
    Aes192Ctr,
}

impl Algorithm {
    /// Every algorithm, in a fixed order (the order of shard slots and metric arrays).
    pub const ALL: [Algorithm; 6] = [
        Algorithm::ChaCha20,
        Algorithm::Aes256Ctr,
        Algorithm::Blake3,
        Algorithm::Randen,
        Algorithm::Aes128Ctr,
        Algorithm::Aes192Ctr,
    ];

    /// The number of algorithms.
    pub const COUNT: usize = Algorithm::ALL.len();

    /// The canonical name: `chacha20`, `aes256ctr`, `blake3`, `randen`, `aes128ctr` or
    /// `aes192ctr`.
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::ChaCha20 => "chacha20",
            Algorithm::Aes256Ctr => "aes256ctr",
            Algorithm::Blake3 => "blake3",
            Algorithm::Randen => "randen",
            Algorithm::Aes128Ctr => "aes128ctr",
            Algorithm::Aes192Ctr => "aes192ctr",
        }
    }

    /// Security strength in bits: the AES key size for CTR_DRBG (SP 800-90A table 3), the key
    /// size for ChaCha20 and keyed BLAKE3, and the 128-bit capacity for Randen.
    pub const fn security_strength_bits(self) -> u32 {
        match self {
            Algorithm::ChaCha20 | Algorithm::Aes256Ctr | Algorithm::Blake3 => 256,
            Algorithm::Aes192Ctr => 192,
            Algorithm::Aes128Ctr | Algorithm::Randen => 128,
        }
    }

    /// Position in [`Algorithm::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The canonical names, comma-separated (for messages).
pub fn names() -> String {
    Algorithm::ALL.map(Algorithm::name).join(", ")
}

/// The name given is not one of the algorithms or their aliases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm (expected one of {})", names())]
pub struct UnknownAlgorithm;

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    /// Case-insensitive; accepts the canonical names and common aliases
    /// (`chacha`, `aes`, `aes256`, `ctr_drbg`, `ctr-drbg`, `blake3-xof`, ...).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        match lower.as_str() {
            "chacha20" | "chacha" | "chacha20rng" => Ok(Algorithm::ChaCha20),
            "aes256ctr" | "aes" | "aes256" | "aes-256-ctr" | "aes256-ctr" | "ctr_drbg" | "ctr-drbg"
            | "ctrdrbg" => Ok(Algorithm::Aes256Ctr),
            "blake3" | "blake3xof" | "blake3-xof" | "blake3_xof" => Ok(Algorithm::Blake3),
            "randen" => Ok(Algorithm::Randen),
            "aes128ctr" | "aes128" | "aes-128-ctr" | "aes128-ctr" => Ok(Algorithm::Aes128Ctr),
            "aes192ctr" | "aes192" | "aes-192-ctr" | "aes192-ctr" => Ok(Algorithm::Aes192Ctr),
            _ => Err(UnknownAlgorithm),
        }
    }
}

/// A deterministic random bit generator mechanism: instantiate, reseed, generate.
///
/// Implementations are deterministic for given inputs (so they can be tested against known
/// answers), provide backtracking resistance at the end of every [`Drbg::generate`] call,
/// zeroize their key material on drop and on every rekey, and never print secrets in `Debug`.
pub trait Drbg: Send + fmt::Debug + 'static {
    /// The algorithm this mechanism implements.
    const ALGORITHM: Algorithm;
    /// Bytes of entropy input requested for instantiate and reseed.
    const ENTROPY_LEN: usize;
    /// Bytes of nonce requested for instantiate.
    const NONCE_LEN: usize;

    /// Creates an instance from entropy input, a nonce and a personalization string.
    fn instantiate(entropy: &[u8], nonce: &[u8], personalization: &[u8]) -> Self;

    /// Mixes fresh entropy and optional additional input into the state.
    fn reseed(&mut self, entropy: &[u8], additional: &[u8]);

    /// Fills `out` completely, then erases the key that produced it.
    ///
    /// # Errors
    /// [`ReseedRequired`] when the mechanism's own reseed interval is exhausted
    /// (CTR_DRBG only, after 2^48 requests); the caller must reseed first.
    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired>;
}

/// The mechanism refuses to generate until it is reseeded (SP 800-90A reseed interval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the generator must be reseeded before it can generate again")]
pub struct ReseedRequired;

/// Why a managed generator refused to produce output. Every variant means "no output":
/// the caller's buffer has been zeroed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DrbgError {
    /// The OS entropy source failed, so the generator could not be (re)seeded. HTTP 503.
    #[error("the entropy source is unavailable")]
    EntropyUnavailable,
    /// The continuous health test rejected the output; the generator is disabled until it is
    /// re-instantiated. HTTP 503.
    #[error("the generator failed its continuous health test")]
    HealthTestFailed,
}
