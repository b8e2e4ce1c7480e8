//! The stream budget (`limits.stream_buffer_bytes`): a streamed chunk is generated only under a
//! [`Permit`] for its largest size ([`chunk_cost`]), which goes back when the transport drops
//! the chunk's bytes (written to the socket, or the stream gone). So the chunks alive at once,
//! all streams together, never hold more than the budget, however fast the generators are and
//! however many streams are open.
//!
//! A permit takes its bytes twice: from the caller's share (a quarter of the budget,
//! [`CALLER_SHARE`]) and from the whole budget, in that order (every stream takes them in the
//! same order, so no two wait on each other). One caller's streams, held by clients that read
//! nothing, can so take at most its share; the others' streams find the rest. Both semaphores
//! are fair: a waiting stream is served in turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The part of the budget one caller's streams may hold at once: 1 / this.
pub const CALLER_SHARE: usize = 4;

/// Bytes a streamed chunk may hold beyond its encoded data: JSON's prefix and suffix.
const CHUNK_SLACK: usize = 1024;

/// The budget's cost of one chunk of `chunk_bytes` raw bytes (`limits.stream_chunk_bytes`):
/// the most a chunk buffer holds whatever the encoding (hex and JSON double the raw bytes;
/// `bits` chunks are an eighth as large raw), so that a buffer recycled from any stream is
/// within what its permit counts.
pub fn chunk_cost(chunk_bytes: usize) -> usize {
    2 * chunk_bytes + CHUNK_SLACK
}

/// The budget and each caller's share of it.
#[derive(Debug)]
pub struct StreamBudget {
    all: Arc<Semaphore>,
    share: usize,
    /// The callers' shares, by name (as many as callers have streamed since start-up).
    callers: Mutex<HashMap<Arc<str>, Arc<Semaphore>>>,
}

/// The stream budget's bytes of one chunk: given back when dropped.
#[derive(Debug)]
pub struct Permit {
    _caller: OwnedSemaphorePermit,
    _all: OwnedSemaphorePermit,
}

/// What one stream takes its permits from: its caller's share and the whole budget.
#[derive(Debug, Clone)]
pub struct Shares {
    caller: Arc<Semaphore>,
    all: Arc<Semaphore>,
    /// A chunk's cost, at most the caller's share.
    cost: u32,
}

impl StreamBudget {
    /// A budget of `bytes`, a quarter of it for each caller.
    pub fn new(bytes: usize) -> StreamBudget {
        let bytes = bytes.min(Semaphore::MAX_PERMITS);
        StreamBudget {
            all: Arc::new(Semaphore::new(bytes)),
            share: (bytes / CALLER_SHARE).max(1),
            callers: Mutex::default(),
        }
    }

    /// The shares a stream of caller `name` takes its chunks' permits from, each chunk costing
    /// `cost` bytes (never more than a caller's share, so a permit can always be had).
    pub fn shares(&self, name: &Arc<str>, cost: usize) -> Shares {
        let mut callers = self.callers.lock().unwrap_or_else(PoisonError::into_inner);
        let caller = callers.entry(name.clone()).or_insert_with(|| Arc::new(Semaphore::new(self.share)));
        let cost = u32::try_from(cost.min(self.share)).unwrap_or(u32::MAX);
        Shares { caller: caller.clone(), all: self.all.clone(), cost }
    }

    /// Bytes of the whole budget not held.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.all.available_permits()
    }
}

impl Shares {
    /// A chunk's permit if both the caller's share and the budget have room now.
    pub fn try_take(&self) -> Option<Permit> {
        let caller = self.caller.clone().try_acquire_many_owned(self.cost).ok()?;
        let all = self.all.clone().try_acquire_many_owned(self.cost).ok()?;
        Some(Permit { _caller: caller, _all: all })
    }

    /// A chunk's permit, once both have room.
    pub async fn take(self) -> Permit {
        // Never closed: an error cannot happen; were it one, the chunk waits for ever rather
        // than going without a permit.
        let Ok(caller) = self.caller.acquire_many_owned(self.cost).await else {
            return std::future::pending().await;
        };
        let Ok(all) = self.all.acquire_many_owned(self.cost).await else {
            return std::future::pending().await;
        };
        Permit { _caller: caller, _all: all }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_caller_holds_at_most_its_share_and_others_find_the_rest() {
        let budget = StreamBudget::new(400);
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let shares = budget.shares(&a, 50);
        let held: Vec<Permit> = std::iter::from_fn(|| shares.try_take()).collect();
        assert_eq!(held.len(), 2, "a quarter of 400 is two chunks of 50");
        assert_eq!(budget.available(), 300);
        let other = budget.shares(&b, 50);
        assert!(other.try_take().is_some(), "another caller still streams");
        drop(held);
        assert_eq!(budget.available(), 400);
    }

    #[test]
    fn a_cost_above_the_share_is_capped_so_a_permit_can_always_be_had() {
        let budget = StreamBudget::new(100);
        let shares = budget.shares(&Arc::from("a"), 1000);
        let permit = shares.try_take().expect("capped at the share");
        assert_eq!(budget.available(), 75);
        drop(permit);
    }

    #[tokio::test]
    async fn a_waiting_stream_gets_its_permit_when_a_chunk_is_dropped() {
        let budget = StreamBudget::new(400);
        let shares = budget.shares(&Arc::from("a"), 100);
        let first = shares.try_take().unwrap();
        assert!(shares.try_take().is_none());
        let waiting = tokio::spawn(shares.clone().take());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        let _second = waiting.await.unwrap();
    }
}
