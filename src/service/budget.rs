//! The stream budget (`limits.stream_buffer_bytes`): a streamed chunk is generated only under a
//! [`Permit`] for its largest size ([`chunk_cost`]), which goes back when the transport drops
//! the chunk's bytes (written to the socket, or the stream gone). So the chunks alive at once,
//! all streams together, never hold more than the budget, however fast the generators are and
//! however many streams are open.
//!
//! A permit takes its bytes twice: from its owner's share (a quarter of the budget for a
//! named caller, [`CALLER_SHARE`]; a sixteenth for a peer, [`PEER_SHARE`]) and from the whole
//! budget, in that order (every stream takes them in the
//! same order, so no two wait on each other). The owner is the caller, or for `anonymous` (the
//! caller of every request with auth off) the peer it came from ([`Owner`]). One owner's
//! streams, held by clients that read nothing, can so take at most its share; the others'
//! streams find the rest. Both semaphores are fair: a waiting stream is served in turn. A
//! share no stream holds is forgotten once the table has grown ([`SWEEP_FROM`]), so peers
//! that streamed once do not accumulate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::peer_key::PeerKey;

/// The part of the budget one named caller's streams may hold at once: 1 / this.
pub const CALLER_SHARE: usize = 4;

/// The part of the budget one peer's anonymous streams may hold at once: 1 / this. Smaller
/// than a caller's: addresses are cheaper to come by than credentials, so a quarter each
/// would let four addresses hold it all; sixteen must here.
pub const PEER_SHARE: usize = 16;

/// Shares kept before the first sweep for shares no stream holds (and at least twice the
/// shares held after a sweep, so sweeps stay rare whatever the number of live owners).
const SWEEP_FROM: usize = 1024;

/// Whose share a stream's chunks take.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// A named caller's (every stream of it, from any address).
    Caller(Arc<str>),
    /// The `anonymous` caller's from one peer: with auth off everyone is `anonymous`, and one
    /// address's slow streams must not hold the share of all.
    Peer(PeerKey),
}

/// Bytes a streamed chunk may hold beyond its encoded data: JSON's prefix and suffix.
const CHUNK_SLACK: usize = 1024;

/// The budget's cost of one chunk of `chunk_bytes` raw bytes (`limits.stream_chunk_bytes`):
/// the most a chunk buffer holds whatever the encoding (hex and JSON double the raw bytes;
/// `bits` chunks are an eighth as large raw), so that a buffer recycled from any stream is
/// within what its permit counts.
pub fn chunk_cost(chunk_bytes: usize) -> usize {
    2 * chunk_bytes + CHUNK_SLACK
}

/// The budget and each owner's share of it.
#[derive(Debug)]
pub struct StreamBudget {
    all: Arc<Semaphore>,
    /// A named caller's share, and a peer's.
    caller_share: usize,
    peer_share: usize,
    /// The owners' shares: those with streams, and those since the last sweep.
    owners: Mutex<Owners>,
}

/// The shares by owner, and the size that triggers the next sweep.
#[derive(Debug, Default)]
struct Owners {
    shares: HashMap<Owner, Arc<Semaphore>>,
    sweep_at: usize,
}

/// The stream budget's bytes of one chunk: given back when dropped.
#[derive(Debug)]
pub struct Permit {
    _owner: OwnedSemaphorePermit,
    _all: OwnedSemaphorePermit,
}

/// What one stream takes its permits from: its owner's share and the whole budget.
#[derive(Debug, Clone)]
pub struct Shares {
    owner: Arc<Semaphore>,
    all: Arc<Semaphore>,
    /// A chunk's cost, at most the caller's share.
    cost: u32,
}

impl StreamBudget {
    /// A budget of `bytes`: a quarter of it for each named caller, a sixteenth for each peer.
    pub fn new(bytes: usize) -> StreamBudget {
        let bytes = bytes.min(Semaphore::MAX_PERMITS);
        StreamBudget {
            all: Arc::new(Semaphore::new(bytes)),
            caller_share: (bytes / CALLER_SHARE).max(1),
            peer_share: (bytes / PEER_SHARE).max(1),
            owners: Mutex::new(Owners { shares: HashMap::new(), sweep_at: SWEEP_FROM }),
        }
    }

    /// The shares a stream of `owner` takes its chunks' permits from, each chunk costing
    /// `cost` bytes (never more than an owner's share, so a permit can always be had).
    pub fn shares(&self, owner: Owner, cost: usize) -> Shares {
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        if !owners.shares.contains_key(&owner) && owners.shares.len() >= owners.sweep_at {
            // A share only this table holds has no stream and no chunk: a new one is the same.
            owners.shares.retain(|_, share| Arc::strong_count(share) > 1);
            owners.sweep_at = (2 * owners.shares.len()).max(SWEEP_FROM);
        }
        let size = match owner {
            Owner::Caller(_) => self.caller_share,
            Owner::Peer(_) => self.peer_share,
        };
        let share = owners.shares.entry(owner).or_insert_with(|| Arc::new(Semaphore::new(size)));
        let cost = u32::try_from(cost.min(size)).unwrap_or(u32::MAX);
        Shares { owner: share.clone(), all: self.all.clone(), cost }
    }

    /// Owners with a share in the table.
    #[cfg(test)]
    fn owners(&self) -> usize {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner).shares.len()
    }

    /// Bytes of the whole budget not held.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.all.available_permits()
    }
}

impl Shares {
    /// A chunk's permit if both the owner's share and the budget have room now.
    pub fn try_take(&self) -> Option<Permit> {
        let owner = self.owner.clone().try_acquire_many_owned(self.cost).ok()?;
        let all = self.all.clone().try_acquire_many_owned(self.cost).ok()?;
        Some(Permit { _owner: owner, _all: all })
    }

    /// A chunk's permit, once both have room.
    pub async fn take(self) -> Permit {
        // Never closed: an error cannot happen; were it one, the chunk waits for ever rather
        // than going without a permit.
        let Ok(owner) = self.owner.acquire_many_owned(self.cost).await else {
            return std::future::pending().await;
        };
        let Ok(all) = self.all.acquire_many_owned(self.cost).await else {
            return std::future::pending().await;
        };
        Permit { _owner: owner, _all: all }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(name: &str) -> Owner {
        Owner::Caller(name.into())
    }

    fn peer(addr: &str) -> Owner {
        Owner::Peer(PeerKey::of(Some(addr.parse().unwrap())))
    }

    /// With auth off every stream is `anonymous`'s: each address has a share of its own, and
    /// a mapped IPv4 address is its IPv4 address.
    #[test]
    fn anonymous_streams_take_their_peer_s_share() {
        let budget = StreamBudget::new(1600);
        let flood = budget.shares(peer("192.0.2.1"), 50);
        let held: Vec<Permit> = std::iter::from_fn(|| flood.try_take()).collect();
        assert_eq!(held.len(), 2, "a sixteenth of 1600 is two chunks of 50");
        assert!(budget.shares(peer("::ffff:192.0.2.1"), 50).try_take().is_none(), "the same peer");
        assert!(budget.shares(peer("192.0.2.2"), 50).try_take().is_some(), "the next address is served");
        // A named caller's share is four times as large.
        let named = budget.shares(caller("web"), 50);
        let held_by_name: Vec<Permit> = std::iter::from_fn(|| named.try_take()).collect();
        assert_eq!(held_by_name.len(), 8);
    }

    #[test]
    fn shares_no_stream_holds_are_forgotten() {
        let budget = StreamBudget::new(SWEEP_FROM * 32);
        let live = budget.shares(peer("198.51.100.1"), 1);
        let _chunk = live.try_take().unwrap();
        for i in 0..(3 * SWEEP_FROM as u32) {
            let addr = std::net::Ipv4Addr::from(0x0a00_0000 + i);
            drop(budget.shares(Owner::Peer(PeerKey::of(Some(addr.into()))), 1));
        }
        assert!(budget.owners() <= SWEEP_FROM + 1, "{} shares kept", budget.owners());
        // The live share survived every sweep: its chunk still counts against it.
        let again = budget.shares(peer("198.51.100.1"), 1);
        assert_eq!(again.owner.available_permits(), SWEEP_FROM * 32 / PEER_SHARE - 1);
    }

    #[test]
    fn one_caller_holds_at_most_its_share_and_others_find_the_rest() {
        let budget = StreamBudget::new(400);
        let (a, b) = (caller("a"), caller("b"));
        let shares = budget.shares(a, 50);
        let held: Vec<Permit> = std::iter::from_fn(|| shares.try_take()).collect();
        assert_eq!(held.len(), 2, "a quarter of 400 is two chunks of 50");
        assert_eq!(budget.available(), 300);
        let other = budget.shares(b, 50);
        assert!(other.try_take().is_some(), "another caller still streams");
        drop(held);
        assert_eq!(budget.available(), 400);
    }

    #[test]
    fn a_cost_above_the_share_is_capped_so_a_permit_can_always_be_had() {
        let budget = StreamBudget::new(100);
        let shares = budget.shares(caller("a"), 1000);
        let permit = shares.try_take().expect("capped at the share");
        assert_eq!(budget.available(), 75);
        drop(permit);
    }

    #[tokio::test]
    async fn a_waiting_stream_gets_its_permit_when_a_chunk_is_dropped() {
        let budget = StreamBudget::new(400);
        let shares = budget.shares(caller("a"), 100);
        let first = shares.try_take().unwrap();
        assert!(shares.try_take().is_none());
        let waiting = tokio::spawn(shares.clone().take());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        let _second = waiting.await.unwrap();
    }
}
