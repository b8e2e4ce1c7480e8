//! The mechanism traits ([`Drbg`], [`ApprovedDrbg`]) and what a generator refuses with
//! ([`ReseedRequired`], [`DrbgError`]). Every mechanism and the managed shard name this file;
//! it names only the algorithms' enum.

use std::fmt;

use super::algorithm_id::Algorithm;

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

    /// Mixes fresh entropy and optional additional input into the state. An SP 800-90A
    /// mechanism once uninstantiated ([`ApprovedDrbg::uninstantiate`]) is left as it is.
    fn reseed(&mut self, entropy: &[u8], additional: &[u8]);

    /// Fills `out` completely, then erases the key that produced it.
    ///
    /// # Errors
    /// [`ReseedRequired`] when the mechanism's own reseed interval is exhausted
    /// (the SP 800-90A mechanisms only, after 2^48 requests); the caller must reseed first.
    fn generate(&mut self, out: &mut [u8], additional: &[u8]) -> Result<(), ReseedRequired>;

    /// Fills `out`, then `sample` with the stream's next bytes (a health-test block that is
    /// never served): as `generate(out)` then `generate(sample)`, which is what this default
    /// does. A mechanism whose every Generate costs a key schedule (CTR_DRBG) draws both from
    /// one Generate instead.
    ///
    /// # Errors
    /// As [`Drbg::generate`]; nothing is served from a call that failed.
    fn generate_sampled(&mut self, out: &mut [u8], sample: &mut [u8; 16]) -> Result<(), ReseedRequired> {
        self.generate(out, &[])?;
        self.generate(sample, &[])
    }
}

/// What the SP 800-90A mechanisms (CTR_DRBG, Hash_DRBG, HMAC_DRBG) add to [`Drbg`] for their
/// start-up self-tests ([`super::selftest`]): a reseed interval below the standard's, and Uninstantiate
/// with a check of it.
pub trait ApprovedDrbg: Drbg {
    /// Lowers the reseed interval below the 2^48 requests of SP 800-90A tables 2 and 3 (an
    /// implementation may choose any up to it): after `requests` Generate calls since the last
    /// (re)seed, [`Drbg::generate`] refuses with [`ReseedRequired`] until [`Drbg::reseed`].
    ///
    /// # Panics
    /// If `requests` is 0 or above 2^48.
    fn set_reseed_interval(&mut self, requests: u64);

    /// Uninstantiate (SP 800-90A 9.4): zeroizes the working state in place, as drop does. The
    /// instance then refuses [`Drbg::generate`] with [`ReseedRequired`] for good: [`Drbg::reseed`]
    /// does nothing to it (SP 800-90A 9.2 step 1). It is there to be dropped.
    fn uninstantiate(&mut self);

    /// Whether the working state reads as zeroized: V, the key (or C) and the reseed counter
    /// all zero. The check of [`ApprovedDrbg::uninstantiate`].
    fn is_zeroized(&self) -> bool;
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
    /// The algorithm failed a start-up self-test, so this process never serves it (a restart
    /// runs the tests again). HTTP 503.
    #[error("{0} failed a start-up self-test and is not served")]
    SelfTestFailed(Algorithm),
}
