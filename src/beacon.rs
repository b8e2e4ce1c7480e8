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
//! ask for it at the moment it falls due ([`Beacon::signed`], [`Beacon::signed_in_turn`]).
//! The requests waiting for the next round are bounded, in all and per peer ([`Beacon::waiter`]).
//!
//! No I/O and nothing of HTTP here: the time is an argument ([`UnixTime`]; only the short wait
//! for a turn to sign an old round reads tokio's timer), the key arrives as text already read
//! (`app.rs`), and the HTTP adapter (`http/beacon.rs`) waits for the next round and writes the
//! headers.
//!
//! Layout:
//! - [`key`]: the secret key in protected memory ([`key::Signer`]), its file format, signing
//!   and verification.
//! - [`chain`]: the chain's public parameters, its hash as drand computes it, its `/info`.
//! - [`clock`]: which round is due when.
//! - [`cache`]: the signed rounds kept.
//! - [`round`]: the constants of the scheme drbgd signs with, the message of a round and a
//!   signed round (what every other file here names).
//! - [`scheme`]: drand's schemes as drbgd verifies them (its own, and the chained one of drand's
//!   default network): what a round signs, and the check of a signature. It names nothing here.

pub mod cache;
pub mod chain;
pub mod clock;
pub mod key;
pub mod round;
pub mod scheme;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::peer_key::PeerKey;

pub use cache::RoundCache;
pub use chain::{Chain, ChainParams};
pub use clock::{Schedule, Timing, UnixTime};
pub use key::{KeyError, Signer};
pub use round::{
    DEFAULT_BEACON_ID, DST, PUBLIC_KEY_LEN, SCHEME_ID, SIGNATURE_LEN, SignedRound, round_message,
};

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
    /// Old rounds are being signed for other requests, past a short wait for a turn; retry
    /// shortly (503).
    Busy,
    /// Round 0: a chain has none (drand's HTTP API reads `/public/0` as the latest, which the
    /// HTTP adapter does before asking here).
    NoRound,
}

/// Requests waiting for the next round at once, at most: each holds a task and its connection
/// for up to a period, and none holds a place under the server's caps meanwhile (the HTTP
/// adapter gives its place back before it waits, so that waiters never take the places health
/// checks need). Past it, a request for the next round is refused (425, to retry once it is
/// due) rather than kept.
pub const MAX_WAITERS: usize = 1024;

/// Requests of one peer (as the per-peer limits count it) waiting for the next round at once,
/// at most: so that a few addresses cannot take every place of [`MAX_WAITERS`]. drand-client
/// asks for one round at a time; two leave room for a second client behind the same address.
pub const MAX_WAITERS_PER_PEER: usize = 2;

/// How long a request for an uncached old round waits for its turn to sign before it is
/// refused as [`Refusal::Busy`]. One signature is a fraction of a millisecond (a hash to the
/// curve and one scalar multiplication), so 50 ms lets a request through behind dozens of
/// distinct old rounds, and behind any number of requests for the same one (those find it in
/// the cache under the permit); yet a flood of distinct old rounds holds each request for no
/// more than a blink, far within `server.request_timeout_ms`, before it is told to retry.
pub const OLD_SIGNING_WAIT: Duration = Duration::from_millis(50);

/// A chain and the rounds it signed.
pub struct Beacon {
    chain: Chain,
    cache: RoundCache,
    /// Its one permit held while an old round (outside the cache's recent window) is signed:
    /// one at a time, so that requests for arbitrary old rounds keep at most one core busy
    /// signing, and the current round never waits behind them (it does not take this). Taken
    /// in turn (the semaphore is fair), the cache looked at again under it.
    old_signing: Semaphore,
    /// Held while a recent round is signed, the cache looked at again under it: when a round
    /// falls due, every request waiting for it wakes at once, and one signs it while the others
    /// wait (a signature's time, well under a millisecond) and take it from the cache, instead
    /// of each signing it again (up to [`MAX_WAITERS`] signatures at each round).
    recent_signing: Mutex<()>,
    /// Requests waiting for the next round (see [`MAX_WAITERS`], [`MAX_WAITERS_PER_PEER`]).
    waiters: Mutex<Waiters>,
}

/// The requests waiting for the next round: in all, and per peer (a peer with none has no
/// entry, so the map holds at most [`MAX_WAITERS`] entries).
#[derive(Debug, Default)]
struct Waiters {
    total: usize,
    by_peer: HashMap<PeerKey, usize>,
}

/// A request's place among those waiting for the next round, given back when dropped.
#[derive(Debug)]
pub struct Waiter<'a> {
    waiters: &'a Mutex<Waiters>,
    peer: PeerKey,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let mut guard = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        let waiters = &mut *guard;
        waiters.total = waiters.total.saturating_sub(1);
        if let Some(n) = waiters.by_peer.get_mut(&self.peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                waiters.by_peer.remove(&self.peer);
            }
        }
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
            old_signing: Semaphore::new(1),
            recent_signing: Mutex::new(()),
            waiters: Mutex::default(),
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
        let current = self.due(round, now)?;
        if let Some(signed) = self.cache.get(round) {
            return Ok(signed);
        }
        if self.cache.is_recent(round, current) {
            return Ok(self.sign_recent(round, current));
        }
        let permit = self.old_signing.try_acquire().map_err(|_| Refusal::Busy)?;
        Ok(self.sign_old(round, current, permit))
    }

    /// Round `round` as [`Beacon::signed`] gives it, but an uncached old round waits up to
    /// [`OLD_SIGNING_WAIT`] for its turn to be signed (or found signed by the request before
    /// it) instead of being refused at once.
    ///
    /// # Errors
    /// As [`Beacon::signed`]; [`Refusal::Busy`] once the wait is over.
    pub async fn signed_in_turn(&self, round: u64, now: UnixTime) -> Result<Arc<SignedRound>, Refusal> {
        match self.signed(round, now) {
            Err(Refusal::Busy) => {}
            answer => return answer,
        }
        let turn = tokio::time::timeout(OLD_SIGNING_WAIT, self.old_signing.acquire()).await;
        // The semaphore is never closed: an error is only the wait's end.
        let permit = turn.ok().and_then(Result::ok).ok_or(Refusal::Busy)?;
        Ok(self.sign_old(round, self.chain.schedule().round_at(now), permit))
    }

    /// The current round at `now` if `round` is due then.
    fn due(&self, round: u64, now: UnixTime) -> Result<u64, Refusal> {
        if round == 0 {
            return Err(Refusal::NoRound);
        }
        let schedule = self.chain.schedule();
        match schedule.timing(round, now) {
            Timing::Due => Ok(schedule.round_at(now)),
            Timing::Next { wait } => Err(Refusal::NotDue { wait, next: true }),
            Timing::TooEarly { wait } => Err(Refusal::NotDue { wait, next: false }),
        }
    }

    /// A recent round, signed by the first request that asks for it and taken from the cache by
    /// those that waited for it meanwhile.
    fn sign_recent(&self, round: u64, current: u64) -> Arc<SignedRound> {
        // A panic while signing poisons nothing that matters: the guard protects no data.
        let _one_at_a_time = self.recent_signing.lock().unwrap_or_else(PoisonError::into_inner);
        self.cache.get(round).unwrap_or_else(|| self.sign(round, current))
    }

    /// An old round, under the permit of `old_signing`: taken from the cache if the request
    /// before it signed it.
    fn sign_old(&self, round: u64, current: u64, _permit: SemaphorePermit<'_>) -> Arc<SignedRound> {
        self.cache.get(round).unwrap_or_else(|| self.sign(round, current))
    }

    fn sign(&self, round: u64, current: u64) -> Arc<SignedRound> {
        let signed = Arc::new(SignedRound::new(round, self.chain.signer().sign(round)));
        self.cache.insert(signed.clone(), current);
        signed
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

    /// A place among the requests waiting for the next round for a request of `peer`, or
    /// `None` past [`MAX_WAITERS`] in all or [`MAX_WAITERS_PER_PEER`] for `peer`.
    pub fn waiter(&self, peer: PeerKey) -> Option<Waiter<'_>> {
        let mut guard = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        let waiters = &mut *guard;
        if waiters.total >= MAX_WAITERS {
            return None;
        }
        let of_peer = waiters.by_peer.entry(peer).or_insert(0);
        if *of_peer >= MAX_WAITERS_PER_PEER {
            return None;
        }
        *of_peer += 1;
        waiters.total += 1;
        Some(Waiter { waiters: &self.waiters, peer })
    }

    /// The rounds kept, for the metrics and the tests.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }
}

#[cfg(test)]
mod tests;
