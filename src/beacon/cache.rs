//! The signed rounds kept, in two bounded tiers:
//! - **recent**: the rounds within [`RECENT`] of the clock's current one (the latest, the one
//!   before it that drand-client fetches with it, the next once due): what nearly every
//!   request asks for, served from memory under a read lock;
//! - **old**: up to [`OLD_CAPACITY`] other rounds (among them those that left the recent
//!   window), the first in first out (no reordering on a hit, so a hit takes only the read lock:
//!   "LRU-ish"), so that requests for arbitrary old rounds evict only each other, never the
//!   current round.
//!
//! Memory is bounded: a round takes about 400 bytes (its body, 180, and the numbers), so the
//! cache at most about `(RECENT + OLD_CAPACITY) * 400` bytes, 420 KB.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, RwLock};

use super::round::SignedRound;

/// Rounds counted as recent: the current one and the seven before it (drand-client asks for
/// the current round and the one before; a client a few periods behind stays in here).
pub const RECENT: u64 = 8;

/// Old rounds kept at most (about 400 KB).
pub const OLD_CAPACITY: usize = 1024;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct RoundCache {
    tiers: RwLock<Tiers>,
}

#[derive(Debug, Default)]
struct Tiers {
    /// Rounds within [`RECENT`] of the current one, in no particular order (at most a few
    /// more than [`RECENT`]: pruned on each insert).
    recent: Vec<Arc<SignedRound>>,
    /// Old rounds by number...
    old: HashMap<u64, Arc<SignedRound>>,
    /// ...and in the order they came, for eviction.
    order: VecDeque<u64>,
}

impl Tiers {
    /// Keeps `signed` among the old rounds, evicting the oldest past [`OLD_CAPACITY`].
    fn keep_old(&mut self, signed: Arc<SignedRound>) {
        if self.old.insert(signed.round, signed.clone()).is_none() {
            self.order.push_back(signed.round);
        }
        while self.order.len() > OLD_CAPACITY {
            if let Some(evicted) = self.order.pop_front() {
                self.old.remove(&evicted);
            }
        }
    }
}

impl RoundCache {
    /// Whether `round` counts as recent while `current` is the current round (the round after
    /// it too, which a request waiting for it signs as soon as it is due).
    pub fn is_recent(&self, round: u64, current: u64) -> bool {
        round.saturating_add(RECENT) > current && round <= current.saturating_add(1)
    }

    /// The signed round `round`, if kept.
    pub fn get(&self, round: u64) -> Option<Arc<SignedRound>> {
        // A poisoned lock (a panic while inserting, which nothing here does) is still a cache.
        let tiers = self.tiers.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = tiers.recent.iter().find(|s| s.round == round) {
            return Some(found.clone());
        }
        tiers.old.get(&round).cloned()
    }

    /// Keeps `signed`, `current` being the current round: rounds that are no longer recent move
    /// to the old tier (a round once kept is not fetched or signed again while it is there); an
    /// old round evicts the oldest old one past [`OLD_CAPACITY`].
    pub fn insert(&self, signed: Arc<SignedRound>, current: u64) {
        let recent = self.is_recent(signed.round, current);
        let mut tiers = self.tiers.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (stay, aged): (Vec<_>, Vec<_>) =
            std::mem::take(&mut tiers.recent).into_iter().partition(|s| self.is_recent(s.round, current));
        tiers.recent = stay;
        for round in aged {
            tiers.keep_old(round);
        }
        if recent {
            if !tiers.recent.iter().any(|s| s.round == signed.round) {
                tiers.recent.push(signed);
            }
            return;
        }
        tiers.keep_old(signed);
    }

    /// Rounds kept, both tiers.
    pub fn len(&self) -> usize {
        let tiers = self.tiers.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        tiers.recent.len() + tiers.old.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
