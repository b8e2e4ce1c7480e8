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
//! **Or it follows a drand network** (`[beacon] source = "drand"`, [`follow`]): its rounds are
//! the network's, fetched from its nodes or relays as they fall due and verified with the
//! network's pinned key before they are kept or served ([`scheme`], [`upstream`]). Then the
//! latest round is the latest verified, not the clock's; a round not yet verified is waited for
//! (the next) or refused until it is; an old round not kept is fetched and verified one at a
//! time, as drbgd's own old rounds are signed one at a time.
//!
//! No I/O and nothing of HTTP here but [`follow`]'s requests to the network: the time is an
//! argument ([`UnixTime`]; only the short wait for a turn to sign an old round reads tokio's
//! timer), the key arrives as text already read (`app.rs`), and the HTTP adapter
//! (`http/beacon.rs`) waits for the next round and writes the headers.
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
//! - [`upstream`]: a drand network's `/info` and rounds as its HTTP API serves them, checked
//!   against the pinned chain and verified (no I/O).
//! - [`follow`]: the requests to the network's nodes and the task that follows its rounds.

pub mod cache;
pub mod chain;
pub mod clock;
pub mod follow;
pub mod key;
pub mod round;
pub mod scheme;
pub mod upstream;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::peer_key::PeerKey;

pub use cache::RoundCache;
pub use chain::{Chain, ChainParams};
pub use clock::{Schedule, Timing, UnixTime, wall_clock};
pub use key::{KeyError, Signer};
pub use round::{
    DEFAULT_BEACON_ID, DST, PUBLIC_KEY_LEN, SCHEME_ID, SIGNATURE_LEN, SignedRound, round_message,
};

/// Why a round is not served now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not due (or, following a network, not verified yet): it may be in `wait`. `next`: it is
    /// the round after the latest, worth waiting for (a round further ahead is refused
    /// outright, 425).
    NotDue {
        /// Time until it is due (following a network: until it is looked for again).
        wait: Duration,
        /// The round right after the latest.
        next: bool,
    },
    /// Old rounds are being signed (or fetched) for other requests, past a short wait for a
    /// turn; retry shortly (503).
    Busy,
    /// Round 0: a chain has none (drand's HTTP API reads `/public/0` as the latest, which the
    /// HTTP adapter does before asking here).
    NoRound,
    /// Following a network: its chain is not known yet (no upstream has answered), no round is
    /// verified yet, or no upstream gave a verified copy of an old round (503).
    Unavailable,
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

/// How long a request for an uncached old round waits for its turn to sign (or fetch) before
/// it is refused as [`Refusal::Busy`]. One signature is a fraction of a millisecond (a hash to
/// the curve and one scalar multiplication), so 50 ms lets a request through behind dozens of
/// distinct old rounds, and behind any number of requests for the same one (those find it in
/// the cache under the permit); yet a flood of distinct old rounds holds each request for no
/// more than a blink, far within `server.request_timeout_ms`, before it is told to retry.
pub const OLD_SIGNING_WAIT: Duration = Duration::from_millis(50);

/// Following a network: how often a request waiting for the next round looks again once the
/// round is due but not yet verified (the network's nodes take a moment to produce it, and
/// the follower to fetch and verify it).
pub const NEXT_ROUND_POLL: Duration = Duration::from_millis(100);

/// Where the rounds come from.
enum Origin {
    /// drbgd's own key signs them.
    Key(Signer),
    /// A drand network makes them; its nodes are asked.
    Drand(Box<follow::Upstreams>),
}

/// A chain and its rounds: signed with drbgd's key, or followed from a drand network.
pub struct Beacon {
    origin: Origin,
    /// The chain: at once for drbgd's key; once an upstream's `/info` matched the pins, when
    /// following a network.
    chain: OnceLock<Chain>,
    cache: RoundCache,
    /// Following a network: the latest verified round (the cache's recent tier counts from the
    /// clock, which a halted network no longer follows).
    latest: RwLock<Option<Arc<SignedRound>>>,
    /// Its one permit held while an old round (outside the cache's recent window) is signed or
    /// fetched: one at a time, so that requests for arbitrary old rounds keep at most one core
    /// busy signing (or one request to the network in flight), and the current round never
    /// waits behind them (it does not take this). Taken in turn (the semaphore is fair), the
    /// cache looked at again under it.
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

/// `/health` as drand answers it: the latest round served and the clock's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    /// The latest round served (0: none).
    pub current: u64,
    /// The round the clock says is due.
    pub expected: u64,
}

impl Health {
    /// drand's relays' rule: `current` is `expected` or the one before it (else 503).
    pub fn healthy(&self) -> bool {
        self.current == self.expected || self.current.saturating_add(1) == self.expected
    }
}

impl std::fmt::Debug for Beacon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Beacon").field("chain", &self.chain.get()).finish_non_exhaustive()
    }
}

impl Beacon {
    /// The beacon of drbgd's key `signer` on `chain` (its chain), with an empty cache.
    pub fn new(chain: Chain, signer: Signer) -> Self {
        let beacon = Self::of(Origin::Key(signer));
        let _ = beacon.chain.set(chain);
        beacon
    }

    /// The beacon that follows the drand network `upstreams` serve: no chain until one of them
    /// answers ([`Beacon::first_contact`], then [`Beacon::follow`], ask them).
    pub fn following(upstreams: follow::Upstreams) -> Self {
        Self::of(Origin::Drand(Box::new(upstreams)))
    }

    fn of(origin: Origin) -> Self {
        Beacon {
            origin,
            chain: OnceLock::new(),
            cache: RoundCache::default(),
            latest: RwLock::new(None),
            old_signing: Semaphore::new(1),
            recent_signing: Mutex::new(()),
            waiters: Mutex::default(),
        }
    }

    /// The chain, once known (always, for drbgd's own key).
    pub fn chain(&self) -> Option<&Chain> {
        self.chain.get()
    }

    /// Whether the rounds are a followed network's, not signed here.
    pub fn follows(&self) -> bool {
        matches!(self.origin, Origin::Drand(_))
    }

    /// Round `round` if it is due at `now` (and, following a network, verified): from the
    /// cache, or signed and cached.
    ///
    /// # Errors
    /// [`Refusal::NotDue`] for a round not yet due (or not yet verified); [`Refusal::Busy`] for
    /// an uncached old round while another is being signed, and following a network for any
    /// uncached old round ([`Beacon::signed_in_turn`] fetches it); [`Refusal::NoRound`] for round
    /// 0; [`Refusal::Unavailable`] while the chain is not known.
    pub fn signed(&self, round: u64, now: UnixTime) -> Result<Arc<SignedRound>, Refusal> {
        let chain = self.chain.get().ok_or(Refusal::Unavailable)?;
        let current = due(chain, round, now)?;
        if let Some(signed) = self.cache.get(round) {
            return Ok(signed);
        }
        // Following a network, its latest verified round is kept apart (the cache's recent tier
        // counts from the clock, which a halted network no longer follows).
        if let Some(latest) = self.latest_verified().filter(|l| l.round == round) {
            return Ok(latest);
        }
        let signer = match &self.origin {
            Origin::Key(signer) => signer,
            Origin::Drand(_) => return Err(self.unverified(chain, round, now)),
        };
        if self.cache.is_recent(round, current) {
            return Ok(self.sign_recent(signer, round, current));
        }
        let permit = self.old_signing.try_acquire().map_err(|_| Refusal::Busy)?;
        Ok(self.sign_old(signer, round, current, permit))
    }

    /// Following a network, why a due round not kept is not served at once: one up to the latest
    /// verified is fetched in turn ([`Refusal::Busy`]; [`Refusal::Unavailable`] if no upstream
    /// gives a verified copy); the clock's current round (due within the last period: the
    /// network may still be making it, the follower fetching it) is looked for again shortly,
    /// as the next round is waited for (then 425); one between the latest verified and the
    /// clock's current (the network behind, or halted) is [`Refusal::Unavailable`]: past, and
    /// not verified here.
    fn unverified(&self, chain: &Chain, round: u64, now: UnixTime) -> Refusal {
        if round <= self.latest_round() {
            return Refusal::Busy;
        }
        if round < chain.schedule().round_at(now) {
            return Refusal::Unavailable;
        }
        let wait = chain.schedule().until(round, now).max(NEXT_ROUND_POLL);
        Refusal::NotDue { wait, next: true }
    }

    /// Round `round` as [`Beacon::signed`] gives it, but an uncached old round waits up to
    /// [`OLD_SIGNING_WAIT`] for its turn to be signed (or fetched from the network and
    /// verified, within the upstreams' timeout), or found kept by the request before it,
    /// instead of being refused at once.
    ///
    /// # Errors
    /// As [`Beacon::signed`]; [`Refusal::Busy`] once the wait is over; following a network,
    /// [`Refusal::Unavailable`] when no upstream gave a verified copy.
    pub async fn signed_in_turn(&self, round: u64, now: UnixTime) -> Result<Arc<SignedRound>, Refusal> {
        match self.signed(round, now) {
            Err(Refusal::Busy) => {}
            answer => return answer,
        }
        let turn = tokio::time::timeout(OLD_SIGNING_WAIT, self.old_signing.acquire()).await;
        // The semaphore is never closed: an error is only the wait's end.
        let permit = turn.ok().and_then(Result::ok).ok_or(Refusal::Busy)?;
        let chain = self.chain.get().ok_or(Refusal::Unavailable)?;
        let current = chain.schedule().round_at(now);
        match &self.origin {
            Origin::Key(signer) => Ok(self.sign_old(signer, round, current, permit)),
            Origin::Drand(upstreams) => {
                if let Some(kept) = self.cache.get(round) {
                    return Ok(kept);
                }
                // Within one upstream timeout in all, however many upstreams are asked: the
                // permit is held meanwhile.
                let fetch = upstreams.round(chain, Some(round), false);
                let fetched = tokio::time::timeout(upstreams.timeout(), fetch).await.ok().flatten();
                let fetched = fetched.ok_or(Refusal::Unavailable)?;
                let fetched = Arc::new(fetched);
                // Recent as counted from the latest verified round, as `accept` counts: an old
                // round fetched while the network halts never evicts the rounds before it.
                self.cache.insert(fetched.clone(), self.latest_round().max(1));
                drop(permit);
                Ok(fetched)
            }
        }
    }

    /// A recent round, signed by the first request that asks for it and taken from the cache by
    /// those that waited for it meanwhile.
    fn sign_recent(&self, signer: &Signer, round: u64, current: u64) -> Arc<SignedRound> {
        // A panic while signing poisons nothing that matters: the guard protects no data.
        let _one_at_a_time = self.recent_signing.lock().unwrap_or_else(PoisonError::into_inner);
        self.cache.get(round).unwrap_or_else(|| self.sign(signer, round, current))
    }

    /// An old round, under the permit of `old_signing`: taken from the cache if the request
    /// before it signed it.
    fn sign_old(
        &self,
        signer: &Signer,
        round: u64,
        current: u64,
        _permit: SemaphorePermit<'_>,
    ) -> Arc<SignedRound> {
        self.cache.get(round).unwrap_or_else(|| self.sign(signer, round, current))
    }

    fn sign(&self, signer: &Signer, round: u64, current: u64) -> Arc<SignedRound> {
        let signed = Arc::new(SignedRound::new(round, &signer.sign(round), None));
        self.cache.insert(signed.clone(), current);
        signed
    }

    /// The latest round at `now` (the clock's, or following a network the latest verified),
    /// and the time until the next one is due.
    ///
    /// # Errors
    /// [`Refusal::NotDue`] before genesis (`next`: round 1 is the next);
    /// [`Refusal::Unavailable`] following a network before its chain is known or any round
    /// after genesis is verified.
    pub fn latest(&self, now: UnixTime) -> Result<(Arc<SignedRound>, Duration), Refusal> {
        let chain = self.chain.get().ok_or(Refusal::Unavailable)?;
        let schedule = chain.schedule();
        let current = schedule.round_at(now);
        if current == 0 {
            return Err(Refusal::NotDue { wait: schedule.until(1, now), next: true });
        }
        let signed = match self.origin {
            Origin::Key(_) => self.signed(current, now)?,
            // Never a round the clock says is not due yet (one taken a moment early, within the
            // clock's next, or a clock stepped back since): the clock's own, if kept, instead.
            Origin::Drand(_) => match self.latest_verified().ok_or(Refusal::Unavailable)? {
                ahead if ahead.round > current => self.cache.get(current).ok_or(Refusal::Unavailable)?,
                latest => latest,
            },
        };
        let next_in = schedule.until(signed.round.saturating_add(1), now);
        Ok((signed, next_in))
    }

    /// Following a network, the latest verified round.
    pub fn latest_verified(&self) -> Option<Arc<SignedRound>> {
        self.latest.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn latest_round(&self) -> u64 {
        self.latest_verified().map_or(0, |r| r.round)
    }

    /// `/health` at `now` (drbgd's own key never lags; a followed network may).
    pub fn health(&self, now: UnixTime) -> Option<Health> {
        let expected = self.chain.get()?.schedule().round_at(now);
        let current = match self.origin {
            Origin::Key(_) => expected,
            Origin::Drand(_) => self.latest_round(),
        };
        Some(Health { current, expected })
    }

    /// Following a network, keeps `verified` (checked against the chain's key by
    /// [`upstream`]), the latest if it is later than the latest kept.
    fn accept(&self, verified: SignedRound) -> Arc<SignedRound> {
        let verified = Arc::new(verified);
        let mut latest = self.latest.write().unwrap_or_else(PoisonError::into_inner);
        if latest.as_ref().is_none_or(|l| l.round < verified.round) {
            *latest = Some(verified.clone());
        }
        let newest = latest.as_ref().map_or(verified.round, |l| l.round);
        drop(latest);
        self.cache.insert(verified.clone(), newest);
        verified
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

/// Following a network: how long after a round's due time it is first asked for (its nodes
/// need a moment to aggregate it).
pub const FETCH_DELAY: Duration = Duration::from_millis(50);

/// Following a network: the first wait before asking again for a round that did not come
/// (doubled on each failure, up to the period).
pub const RETRY_FIRST: Duration = Duration::from_millis(250);

/// Following a network whose upstreams have not answered `/info`: the longest wait between
/// attempts.
pub const INFO_RETRY_MAX: Duration = Duration::from_secs(30);

impl Beacon {
    /// Following a network, asks its upstreams for `/info` once (at start-up): `Ok(true)` when
    /// one named the pinned chain, `Ok(false)` when none answered (asked again by
    /// [`Beacon::follow`]).
    ///
    /// # Errors
    /// Every upstream answered and none named the pinned chain (each is logged by name).
    pub async fn first_contact(&self) -> Result<bool, follow::InfoOutcome> {
        let Origin::Drand(upstreams) = &self.origin else { return Ok(true) };
        match upstreams.info().await {
            follow::InfoOutcome::Found(chain) => {
                let _ = self.chain.set(*chain);
                Ok(true)
            }
            follow::InfoOutcome::Down => Ok(false),
            refused => Err(refused),
        }
    }

    /// Following a network, the task that keeps its rounds: the chain's `/info` until an
    /// upstream gives it, then each round as it falls due (from the chain's own schedule: a
    /// request a period, not a poll), verified and kept; a round that does not come is asked
    /// again after [`RETRY_FIRST`], doubling up to a period, and the upstreams' latest taken
    /// if later than the one kept (a network that halted and resumed, or drbgd catching up
    /// after an outage, jumps to the latest at once; rounds between are fetched when asked
    /// for). Returns at once for drbgd's own key.
    pub async fn follow(self: Arc<Self>) {
        let Origin::Drand(upstreams) = &self.origin else { return };
        let mut retry = RETRY_FIRST;
        let chain = loop {
            if let Some(chain) = self.chain.get() {
                break chain;
            }
            // -1: the network's chain not known yet (no upstream has answered /info).
            upstreams.series().lag.set(-1);
            if let follow::InfoOutcome::Found(chain) = upstreams.info().await {
                let _ = self.chain.set(*chain);
                continue;
            }
            tokio::time::sleep(retry).await;
            retry = (retry * 2).min(INFO_RETRY_MAX);
        };
        let schedule = chain.schedule();
        let period = Duration::from_secs(u64::from(schedule.period_s));
        retry = RETRY_FIRST;
        loop {
            let current = schedule.round_at(wall_clock());
            let latest = self.latest_round();
            upstreams.series().lag.set(i64::try_from(current.saturating_sub(latest)).unwrap_or(i64::MAX));
            if current == 0 || latest >= current {
                let next = latest.max(current).saturating_add(1);
                tokio::time::sleep(schedule.until(next, wall_clock()) + FETCH_DELAY).await;
                retry = RETRY_FIRST;
                continue;
            }
            let fetched = match upstreams.round(chain, Some(current), true).await {
                Some(round) => Some(round),
                None => upstreams.round(chain, None, true).await.filter(|r| r.round > latest),
            };
            match fetched {
                Some(round) => {
                    let kept = self.accept(round);
                    upstreams.series().latest.set(i64::try_from(kept.round).unwrap_or(i64::MAX));
                    retry = RETRY_FIRST;
                }
                None => {
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(period);
                }
            }
        }
    }
}

/// The clock's current round at `now` if `round` is due then.
fn due(chain: &Chain, round: u64, now: UnixTime) -> Result<u64, Refusal> {
    if round == 0 {
        return Err(Refusal::NoRound);
    }
    let schedule = chain.schedule();
    match schedule.timing(round, now) {
        Timing::Due => Ok(schedule.round_at(now)),
        Timing::Next { wait } => Err(Refusal::NotDue { wait, next: true }),
        Timing::TooEarly { wait } => Err(Refusal::NotDue { wait, next: false }),
    }
}

#[cfg(test)]
mod tests;
