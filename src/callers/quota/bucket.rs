//! Per-caller quotas: two token buckets (requests and raw random bytes) and a cap on requests
//! in progress, kept in this process (with a shared store, the buckets are leased from it:
//! [`super::lease`]; these local ones then serve only the fallback). Time is tokio's monotonic
//! clock (`Instant`, which tests can pause), so a wall-clock jump refills nothing;
//! a `now` earlier than the last one (which the monotonic clock never gives) refills nothing
//! either. State lives in [`QuotaState`], shared across reloads, so a reload never refills.
//!
//! A bucket holds up to `burst` tokens and gains `rate` per second. A request costing `c` is
//! let through when the bucket holds `min(c, burst)`; it then takes all `c`, so a request
//! larger than the burst is possible (once the bucket is full) and leaves the bucket in debt
//! for as long as its excess takes to refill: over any interval `T` a caller gets at most
//! `burst + rate * T` plus one request's excess.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::lease::Lease;
use super::store::Kind;

/// One bucket's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens per second.
    pub per_second: f64,
    /// Bucket size.
    pub burst: f64,
}

/// A bucket's level at an instant.
#[derive(Debug, Clone, Copy)]
struct Level {
    tokens: f64,
    at: Instant,
}

/// A token bucket (its parameters are passed in, so a reload can change them).
#[derive(Debug)]
pub struct Bucket(Mutex<Option<Level>>);

/// A refused take: how long until it would pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wait(pub Duration);

impl Default for Bucket {
    fn default() -> Self {
        Bucket(Mutex::new(None))
    }
}

impl Bucket {
    /// Takes `cost` tokens at `now`, returning the tokens left (negative while in debt).
    ///
    /// # Errors
    /// [`Wait`] when the bucket holds less than `min(cost, burst)`; nothing is taken.
    pub fn take(&self, rate: Rate, cost: f64, now: Instant) -> Result<f64, Wait> {
        let mut level = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut current = refill(*level, rate, now);
        let need = cost.min(rate.burst);
        if current.tokens + 1e-9 < need {
            *level = Some(current);
            let secs = (need - current.tokens) / rate.per_second;
            return Err(Wait(Duration::from_secs_f64(secs.clamp(0.0, 86_400.0))));
        }
        current.tokens -= cost;
        *level = Some(current);
        Ok(current.tokens)
    }

    /// The tokens available at `now`, taking none.
    pub fn peek(&self, rate: Rate, now: Instant) -> f64 {
        let level = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        refill(*level, rate, now).tokens
    }
}

/// The level at `now`: full when never used, else refilled for the time elapsed (none when
/// `now` is not later), never above the burst (a smaller burst after a reload applies at once).
fn refill(level: Option<Level>, rate: Rate, now: Instant) -> Level {
    match level {
        None => Level { tokens: rate.burst, at: now },
        Some(Level { tokens, at }) => {
            let elapsed = now.saturating_duration_since(at).as_secs_f64();
            Level { tokens: (tokens + elapsed * rate.per_second).min(rate.burst), at: at.max(now) }
        }
    }
}

/// Seconds until a bucket at `tokens` is full again, rounded up (the `t` of the RateLimit field).
pub fn seconds_to_full(rate: Rate, tokens: f64) -> u64 {
    let secs = ((rate.burst - tokens) / rate.per_second).max(0.0);
    secs.ceil().min(86_400.0) as u64
}

/// A caller's quota parameters, from its settings.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Quota {
    /// Requests, when limited.
    pub requests: Option<Rate>,
    /// Raw random bytes, when limited.
    pub bytes: Option<Rate>,
    /// Requests in progress, when limited.
    pub max_in_flight: Option<u32>,
}

impl Quota {
    /// Whether any limit applies (and so the rate-limit fields are sent).
    pub fn is_limited(&self) -> bool {
        self.requests.is_some() || self.bytes.is_some()
    }
}

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
    use proptest::prelude::*;

    const R: Rate = Rate { per_second: 50.0, burst: 10.0 };

    #[test]
    fn burst_then_the_rate() {
        let b = Bucket::default();
        let t0 = Instant::now();
        for _ in 0..10 {
            b.take(R, 1.0, t0).unwrap();
        }
        let wait = b.take(R, 1.0, t0).unwrap_err();
        assert!((wait.0.as_secs_f64() - 0.02).abs() < 1e-6, "{wait:?}");
        assert!(b.take(R, 1.0, t0 + Duration::from_millis(20)).is_ok());
        assert!(b.take(R, 1.0, t0 + Duration::from_millis(20)).is_err());
        assert_eq!(seconds_to_full(R, b.peek(R, t0 + Duration::from_millis(20))), 1);
        assert!((b.peek(R, t0 + Duration::from_secs(60)) - 10.0).abs() < 1e-9, "capped at the burst");
    }

    #[test]
    fn time_going_backwards_refills_nothing() {
        let b = Bucket::default();
        let t0 = Instant::now() + Duration::from_secs(100);
        for _ in 0..10 {
            b.take(R, 1.0, t0).unwrap();
        }
        // An earlier instant (as a clock stepped back would give) neither refills nor moves
        // the bucket's time back, so the later refill is not counted twice either.
        assert!(b.take(R, 1.0, t0 - Duration::from_secs(50)).is_err());
        assert!(b.peek(R, t0 - Duration::from_secs(50)) < 1e-9);
        assert!((b.peek(R, t0 + Duration::from_millis(100)) - 5.0).abs() < 1e-6);
    }

    #[test]
    fn a_request_larger_than_the_burst_waits_for_a_full_bucket_then_owes() {
        let bytes = Rate { per_second: 1000.0, burst: 1000.0 };
        let b = Bucket::default();
        let t0 = Instant::now();
        b.take(bytes, 100.0, t0).unwrap();
        assert!(b.take(bytes, 5000.0, t0).is_err(), "the bucket is not full");
        let t1 = t0 + Duration::from_millis(100);
        assert!((b.take(bytes, 5000.0, t1).unwrap() + 4000.0).abs() < 1e-6, "debt of 4000");
        let wait = b.take(bytes, 1.0, t1).unwrap_err();
        assert!((wait.0.as_secs_f64() - 4.001).abs() < 1e-6, "{wait:?}");
    }

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

    proptest! {
        /// Whatever the arrivals and costs, what a bucket lets through over [0, T] is at most
        /// burst + rate * T plus one request's excess over the burst.
        #[test]
        fn never_more_than_the_rate_allows(
            steps in proptest::collection::vec((0u64..50_000, 1u32..40), 1..300),
            per_second in 1u32..200, burst in 1u32..30,
        ) {
            let rate = Rate { per_second: f64::from(per_second), burst: f64::from(burst) };
            let b = Bucket::default();
            let t0 = Instant::now();
            let (mut at, mut granted, mut largest) = (0u64, 0f64, 0f64);
            for (gap_us, cost) in steps {
                at += gap_us;
                let cost = f64::from(cost);
                if b.take(rate, cost, t0 + Duration::from_micros(at)).is_ok() {
                    granted += cost;
                    largest = largest.max(cost - rate.burst);
                }
            }
            let bound = rate.burst + rate.per_second * at as f64 / 1e6 + largest.max(0.0);
            prop_assert!(granted <= bound + 1e-6, "granted {granted} > bound {bound}");
        }
    }
}
