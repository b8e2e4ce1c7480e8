//! A token bucket kept in this process: the whole quota with `[quota] store = "local"`, the
//! fallback share with a shared store (whose buckets are leased: [`super::lease`]). Time is
//! tokio's monotonic clock (`Instant`, which tests can pause), so a wall-clock jump refills
//! nothing; a `now` earlier than the last one (which the monotonic clock never gives) refills
//! nothing either. A caller's buckets live in its [`super::state::QuotaState`], shared across
//! reloads, so a reload never refills.
//!
//! A bucket holds up to `burst` tokens and gains `rate` per second. A request costing `c` is
//! let through when the bucket holds `min(c, burst)`; it then takes all `c`, so a request
//! larger than the burst is possible (once the bucket is full) and leaves the bucket in debt
//! for as long as its excess takes to refill: over any interval `T` a caller gets at most
//! `burst + rate * T` plus one request's excess.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::types::{Rate, Wait};

/// A bucket's level at an instant.
#[derive(Debug, Clone, Copy)]
struct Level {
    tokens: f64,
    at: Instant,
}

/// A token bucket (its parameters are passed in, so a reload can change them).
#[derive(Debug)]
pub struct Bucket(Mutex<Option<Level>>);

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

#[cfg(test)]
mod tests {
    use super::super::types::seconds_to_full;
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
