//! A caller's quota state, kept across reloads: its two local buckets, its leases on a
//! shared store's buckets, and its requests in progress (the in-flight cap, always counted
//! per instance: it protects this replica's own capacity).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::time::Instant;

use super::bucket::Bucket;
use super::lease::Lease;
use super::types::Kind;

/// A caller's quota state: buckets and the in-progress count, kept across reloads.
#[derive(Debug)]
pub struct QuotaState {
    /// The request bucket.
    pub requests: Bucket,
    /// The byte bucket.
    pub bytes: Bucket,
    in_flight: AtomicU32,
    /// Leases on the shared store's buckets (requests, bytes), when there is one.
    leases: [Mutex<Lease>; 2],
}

impl Default for QuotaState {
    fn default() -> Self {
        let now = Instant::now();
        QuotaState {
            requests: Bucket::default(),
            bytes: Bucket::default(),
            in_flight: AtomicU32::new(0),
            leases: [Mutex::new(Lease::new(now)), Mutex::new(Lease::new(now))],
        }
    }
}

impl QuotaState {
    /// Counts one more request in progress, unless `max` are already; the guard counts it out.
    /// A refused entry never touches the count (compare-and-swap under the bound), so it
    /// cannot make a concurrent one see the caller fuller than it is.
    pub fn enter(self: &std::sync::Arc<Self>, max: Option<u32>) -> Option<InFlight> {
        match max {
            None => {
                self.in_flight.fetch_add(1, Ordering::AcqRel);
            }
            Some(max) => {
                self.in_flight
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1))
                    .ok()?;
            }
        }
        Some(InFlight(self.clone()))
    }

    /// The lease on the shared store's `kind` bucket, locked (a poisoned lock is taken as is:
    /// the lease holds numbers only, each update complete).
    pub fn lease(&self, kind: Kind) -> std::sync::MutexGuard<'_, Lease> {
        self.leases[kind as usize].lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The local bucket of `kind`.
    pub fn bucket(&self, kind: Kind) -> &Bucket {
        match kind {
            Kind::Requests => &self.requests,
            Kind::Bytes => &self.bytes,
        }
    }

    /// Requests in progress now.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Acquire)
    }
}

/// One request in progress; dropping it counts it out.
#[derive(Debug)]
pub struct InFlight(std::sync::Arc<QuotaState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_is_capped_and_released() {
        let s = std::sync::Arc::new(QuotaState::default());
        let a = s.enter(Some(2)).unwrap();
        let _b = s.enter(Some(2)).unwrap();
        assert!(s.enter(Some(2)).is_none());
        assert_eq!(s.in_flight(), 2);
        drop(a);
        assert!(s.enter(Some(2)).is_some());
        assert!(s.enter(None).is_some());
    }

    /// A refused entry must never show in the count, not even for a moment: with one place of
    /// two held, entries under a cap of 2 always fit, however many entries under a cap of 1
    /// (always refused) run at the same time. (Adding first and backing out after refused some.)
    #[test]
    fn a_refused_entry_never_crowds_out_one_that_fits() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        let s = Arc::new(QuotaState::default());
        let _held = s.enter(Some(2)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let refused: Vec<_> = (0..2)
            .map(|_| {
                let (s, stop) = (s.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        assert!(s.enter(Some(1)).is_none());
                    }
                })
            })
            .collect();
        let spurious = (0..100_000).filter(|_| s.enter(Some(2)).is_none()).count();
        stop.store(true, Ordering::Relaxed);
        for t in refused {
            t.join().unwrap();
        }
        assert_eq!(spurious, 0, "entries refused though a place was free");
        assert_eq!(s.in_flight(), 1);
    }
}
