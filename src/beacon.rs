//! The randomness beacon: a drand-compatible chain of rounds, each a BLS signature over its
//! round number, that anyone holding the chain's public key verifies and that drand's own
//! clients (drand-client, drand-verify, tlock) read with no drbgd code.
//!
//! The scheme is drand's `bls-unchained-g1-rfc9380` (quicknet's): round `r`'s signature is on
//! BLS12-381 G1 over SHA-256 of `r` as an 8-byte big-endian integer, hashed to the curve with
//! [`DST`]; the public key is on G2; the round's randomness is SHA-256 of the signature. The
//! curve arithmetic is `blst`'s (`min_sig`), none of ours.
//!
//! Rounds follow the clock: round `r` is due at `genesis + (r - 1) * period`
//! ([`clock::Schedule`]). BLS signatures are deterministic, so every replica holding the key
//! signs a round to the same bytes with no coordination. A round is signed once and kept in a
//! bounded cache ([`cache::RoundCache`]): the rounds near the clock's, which nearly every
//! request asks for, apart from old ones, so that requests for arbitrary old rounds can evict
//! only each other; and old rounds are signed one at a time, a recent one once however many
//! ask for it at the moment it falls due ([`Beacon::signed`]).
//!
//! No I/O and nothing of HTTP here: the time is an argument ([`UnixTime`]), the key arrives as
//! text already read (`app.rs`), and the HTTP adapter (`http/beacon.rs`) waits for the next
//! round and writes the headers.
//!
//! Layout:
//! - [`key`]: the secret key in protected memory ([`key::Signer`]), its file format, signing
//!   and verification.
//! - [`chain`]: the chain's public parameters, its hash as drand computes it, its `/info`.
//! - [`clock`]: which round is due when.
//! - [`cache`]: the signed rounds kept.

pub mod cache;
pub mod chain;
pub mod clock;
pub mod key;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;

use sha2::{Digest, Sha256};

pub use cache::RoundCache;
pub use chain::{Chain, ChainParams};
pub use clock::{Schedule, Timing, UnixTime};
pub use key::{KeyError, Signer};

/// drand's name of the scheme, `schemeID` in `/info`.
pub const SCHEME_ID: &str = "bls-unchained-g1-rfc9380";

/// The hash-to-curve domain separation tag of signatures on G1 (RFC 9380's suite for
/// BLS12-381 G1 with SHA-256, as drand's quicknet and the IETF BLS draft name it).
pub const DST: &[u8] = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_";

/// The beacon id drand leaves out of the chain hash (its "default" beacon).
pub const DEFAULT_BEACON_ID: &str = "default";

/// Bytes of a signature (a compressed G1 point).
pub const SIGNATURE_LEN: usize = 48;

/// Bytes of a public key (a compressed G2 point).
pub const PUBLIC_KEY_LEN: usize = 96;

/// The message signed for round `round`: SHA-256 of the round as 8 bytes, big-endian (drand's
/// unchained schemes; chained ones put the previous signature first).
pub fn round_message(round: u64) -> [u8; 32] {
    Sha256::digest(round.to_be_bytes()).into()
}

/// A signed round, as every replica serves it: its number, signature and randomness, and its
/// JSON body rendered once (`{"round", "randomness", "signature"}`, no `previous_signature`
/// key at all: drand-client refuses even an empty one on an unchained scheme).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedRound {
    /// The round number.
    pub round: u64,
    /// The BLS signature (compressed G1).
    pub signature: [u8; SIGNATURE_LEN],
    /// SHA-256 of the signature.
    pub randomness: [u8; 32],
    /// The JSON body.
    pub json: bytes::Bytes,
}

impl SignedRound {
    /// The round of `signature`, its randomness computed and its body rendered.
    pub fn new(round: u64, signature: [u8; SIGNATURE_LEN]) -> Self {
        let randomness: [u8; 32] = Sha256::digest(signature).into();
        // Written by hand: the order is fixed, and the values need no escaping.
        let json = format!(
            "{{\"round\":{round},\"randomness\":\"{}\",\"signature\":\"{}\"}}",
            const_hex::encode(randomness),
            const_hex::encode(signature)
        );
        SignedRound { round, signature, randomness, json: bytes::Bytes::from(json) }
    }
}

/// Why a round is not served now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not due: it will be in `wait`. `next`: it is the round after the current one, worth
    /// waiting for (a round further ahead is refused outright, 425).
    NotDue {
        /// Time until it is due.
        wait: Duration,
        /// The round right after the current one.
        next: bool,
    },
    /// An old round is being signed for another request; retry shortly (503).
    Busy,
    /// Round 0: a chain has none (drand's HTTP API reads `/public/0` as the latest, which the
    /// HTTP adapter does before asking here).
    NoRound,
}

/// Requests waiting for the next round at once, at most: each holds a task and its connection
/// for up to a period, and none holds a place under the server's caps meanwhile (the HTTP
/// adapter gives its place back before it waits, so that waiters never take the places health
/// checks need). Past it, a request for the next round is refused (503) rather than kept.
pub const MAX_WAITERS: usize = 1024;

/// A chain and the rounds it signed.
pub struct Beacon {
    chain: Chain,
    cache: RoundCache,
    /// Held while an old round (outside the cache's recent window) is signed: one at a time,
    /// so that requests for arbitrary old rounds keep at most one core busy signing, and the
    /// current round never waits behind them (it does not take this).
    old_signing: Mutex<()>,
    /// Held while a recent round is signed, the cache looked at again under it: when a round
    /// falls due, every request waiting for it wakes at once, and one signs it while the others
    /// wait (a signature's time, well under a millisecond) and take it from the cache, instead
    /// of each signing it again (up to [`MAX_WAITERS`] signatures at each round).
    recent_signing: Mutex<()>,
    /// Requests waiting for the next round (see [`MAX_WAITERS`]).
    waiters: AtomicUsize,
}

/// A request's place among those waiting for the next round, given back when dropped.
#[derive(Debug)]
pub struct Waiter<'a>(&'a AtomicUsize);

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Beacon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Beacon").field("chain", &self.chain).finish_non_exhaustive()
    }
}

impl Beacon {
    /// The beacon of `chain`, with an empty cache.
    pub fn new(chain: Chain) -> Self {
        Beacon {
            chain,
            cache: RoundCache::default(),
            old_signing: Mutex::new(()),
            recent_signing: Mutex::new(()),
            waiters: AtomicUsize::new(0),
        }
    }

    /// The chain.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// Round `round` if it is due at `now`: from the cache, or signed and cached.
    ///
    /// # Errors
    /// [`Refusal::NotDue`] for a round not yet due; [`Refusal::Busy`] for an uncached old
    /// round while another is being signed; [`Refusal::NoRound`] for round 0.
    pub fn signed(&self, round: u64, now: UnixTime) -> Result<Arc<SignedRound>, Refusal> {
        if round == 0 {
            return Err(Refusal::NoRound);
        }
        let schedule = self.chain.schedule();
        match schedule.timing(round, now) {
            Timing::Due => {}
            Timing::Next { wait } => return Err(Refusal::NotDue { wait, next: true }),
            Timing::TooEarly { wait } => return Err(Refusal::NotDue { wait, next: false }),
        }
        let current = schedule.round_at(now);
        if let Some(signed) = self.cache.get(round) {
            return Ok(signed);
        }
        // A panic while signing poisons nothing that matters: the guards protect no data.
        let _one_at_a_time = if self.cache.is_recent(round, current) {
            let guard = self.recent_signing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(signed) = self.cache.get(round) {
                return Ok(signed);
            }
            guard
        } else {
            match self.old_signing.try_lock() {
                Ok(guard) => guard,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return Err(Refusal::Busy),
            }
        };
        let signed = Arc::new(SignedRound::new(round, self.chain.signer().sign(round)));
        self.cache.insert(signed.clone(), current);
        Ok(signed)
    }

    /// The latest round due at `now`, and the time until the next one is due.
    ///
    /// # Errors
    /// [`Refusal::NotDue`] before genesis (`next`: round 1 is the next).
    pub fn latest(&self, now: UnixTime) -> Result<(Arc<SignedRound>, Duration), Refusal> {
        let schedule = self.chain.schedule();
        let current = schedule.round_at(now);
        if current == 0 {
            return Err(Refusal::NotDue { wait: schedule.until(1, now), next: true });
        }
        let signed = self.signed(current, now)?;
        Ok((signed, schedule.until(current + 1, now)))
    }

    /// A place among the requests waiting for the next round, or `None` past [`MAX_WAITERS`].
    pub fn waiter(&self) -> Option<Waiter<'_>> {
        self.waiters
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_WAITERS).then_some(n + 1))
            .ok()
            .map(|_| Waiter(&self.waiters))
    }

    /// The rounds kept, for the metrics and the tests.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }
}

#[cfg(test)]
mod tests;
