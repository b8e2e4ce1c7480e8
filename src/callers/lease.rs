//! A replica's lease on one of a caller's buckets in the shared store: tokens taken from the
//! global bucket ahead of use and spent here without a round trip. This is the decision logic
//! alone (time is passed in); [`super::store`] carries out the exchanges it asks for.
//!
//! A request is let through when the tokens in hand cover it, or else on credit: up to this
//! replica's share of the global bucket's last-known level (the level projected forward at the
//! caller's rate, divided among the live replicas), and at least one request when that level
//! covers it. Credit is settled with the store at once. When the hand runs below half a lease,
//! an exchange tops it up to a lease sized to this replica's recent use (`lease_ms` of it).
//!
//! The bound: every token spent is charged to the global bucket (from a lease or as a settled
//! debt), and the global bucket never holds more than its burst plus the rate times the time
//! elapsed. So over any interval `T` a caller gets at most
//! `burst + rate * T + replicas * (lease + one request)`: the leases and the credit in hand at
//! the start of the interval. Under-use is bounded the same way (tokens sitting in other
//! replicas' hands), and unused hands go back to the store after [`IDLE`].

use std::time::Duration;

use tokio::time::Instant;

use super::quota::{Rate, Wait};

/// Unspent tokens go back to the store after this long without a spend.
pub const IDLE: Duration = Duration::from_secs(1);

/// An exchange with the store: pay `settle` tokens spent on credit (negative: give tokens
/// back) and take up to `want` more, none unless at least `at_least` are there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exchange {
    /// Tokens owed (spent on credit), or given back when negative.
    pub settle: f64,
    /// Tokens wanted in hand.
    pub want: f64,
    /// Fewer than this are not worth taking.
    pub at_least: f64,
}

/// The store's answer to an [`Exchange`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exchanged {
    /// Tokens granted.
    pub granted: f64,
    /// The global level after the exchange (negative: in debt).
    pub level: f64,
}

/// The decision for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spend {
    /// Let through.
    Spent,
    /// Refused.
    Refused(Wait),
}

/// A lease's state.
#[derive(Debug)]
pub struct Lease {
    /// Tokens taken from the store and not spent; negative: spent on credit, not settled yet.
    hand: f64,
    /// The global level at the last exchange, and when (none yet: taken as full).
    known: Option<(f64, Instant)>,
    /// An exchange is under way.
    exchanging: bool,
    /// What that exchange settles (the store's level, once it answers, is that much lower).
    settling: f64,
    /// The lease size: this replica's recent use over `window`.
    size: f64,
    /// Spent since `since` (for the size).
    spent: f64,
    since: Instant,
    /// The last spend.
    last_spend: Instant,
    /// The lease duration.
    window: Duration,
}

impl Lease {
    /// An empty lease (its duration is given with each spend).
    pub fn new(now: Instant) -> Self {
        Lease {
            hand: 0.0,
            known: None,
            exchanging: false,
            settling: 0.0,
            size: 1.0,
            spent: 0.0,
            since: now,
            last_spend: now,
            window: Duration::from_millis(100),
        }
    }

    /// The global level projected to `now` (full when never seen), less what an exchange under
    /// way is settling.
    fn projected(&self, rate: Rate, now: Instant) -> f64 {
        let level = match self.known {
            None => rate.burst,
            Some((level, at)) => {
                let elapsed = now.saturating_duration_since(at).as_secs_f64();
                (level + elapsed * rate.per_second).min(rate.burst)
            }
        };
        level - self.settling
    }

    /// Spends `cost` tokens at `now` if the hand or credit covers them, with `replicas` alive
    /// and leases of `window`.
    /// The exchange to start, if any, is returned with the decision (and the lease is then
    /// marked as exchanging until [`Lease::settled`] or [`Lease::failed`]).
    pub fn spend(
        &mut self,
        rate: Rate,
        cost: f64,
        (replicas, window): (u32, Duration),
        now: Instant,
    ) -> (Spend, Option<Exchange>) {
        self.window = window;
        let need = cost.min(rate.burst);
        let projected = self.projected(rate, now);
        let paid = if self.hand + 1e-9 >= cost {
            true
        } else {
            // Credit: this replica's share of what the store last held, at least one request
            // when the store held that much; never more than that owed at once.
            let share = projected / f64::from(replicas.max(1));
            let credit = if projected + 1e-9 >= need { share.max(cost) } else { share };
            self.hand - cost + 1e-9 >= -credit && (self.hand >= 0.0 || self.hand - cost >= -share)
        };
        if !paid {
            let short = need - self.hand.max(0.0) - projected.max(0.0);
            let wait = (short.max(0.0) / rate.per_second).clamp(0.001, 86_400.0);
            // Learn the level again when what we know is older than a lease.
            let stale = self.known.is_none_or(|(_, at)| now.saturating_duration_since(at) >= self.window);
            let exchange = (stale && !self.exchanging).then(|| self.begin(rate, need));
            return (Spend::Refused(Wait(Duration::from_secs_f64(wait))), exchange);
        }
        self.hand -= cost;
        self.spent += cost;
        self.last_spend = now;
        let low = self.hand < 0.0 || self.hand < self.size / 2.0;
        let exchange = (low && !self.exchanging).then(|| self.begin(rate, need));
        (Spend::Spent, exchange)
    }

    /// Starts an exchange: settle what is owed, ask for a lease sized to recent use.
    fn begin(&mut self, rate: Rate, need: f64) -> Exchange {
        self.exchanging = true;
        let owed = (-self.hand).max(0.0);
        self.hand += owed;
        self.settling = owed;
        let want = (self.size.max(need) - self.hand).max(0.0);
        Exchange { settle: owed, want, at_least: need.min(want).min(rate.burst) }
    }

    /// The store answered `reply` to the exchange started by [`Lease::spend`].
    pub fn settled(&mut self, rate: Rate, reply: Exchanged, now: Instant) {
        self.exchanging = false;
        self.settling = 0.0;
        self.hand += reply.granted;
        self.known = Some((reply.level, now));
        // Resized once a lease long, or sooner when more than two leases went in a tenth of
        // that (a caller starting fast would otherwise take a lease of one token per exchange
        // until the first lease-long period is over).
        let (elapsed, window) =
            (now.saturating_duration_since(self.since).as_secs_f64(), self.window.as_secs_f64());
        if elapsed >= window || (elapsed >= window / 10.0 && self.spent >= 2.0 * self.size) {
            let use_rate = self.spent / elapsed;
            self.size = (use_rate * self.window.as_secs_f64()).clamp(1.0, rate.burst.max(1.0));
            self.spent = 0.0;
            self.since = now;
        }
    }

    /// The exchange failed (the store is unreachable): what was in hand or owed is forgotten.
    pub fn failed(&mut self) {
        self.exchanging = false;
        self.settling = 0.0;
        self.hand = 0.0;
        self.known = None;
    }

    /// Gives back unspent tokens after [`IDLE`] without a spend: the exchange to start.
    pub fn give_back(&mut self, now: Instant) -> Option<Exchange> {
        if self.exchanging || self.hand <= 0.0 || now.saturating_duration_since(self.last_spend) < IDLE {
            return None;
        }
        self.give_back_now()
    }

    /// Gives back every unspent token now and settles what is owed (shutdown): the exchange to
    /// start, if there is anything to exchange.
    pub fn give_back_now(&mut self) -> Option<Exchange> {
        if self.hand == 0.0 {
            return None;
        }
        self.exchanging = true;
        let back = self.hand;
        self.hand = 0.0;
        Some(Exchange { settle: -back, want: 0.0, at_least: 0.0 })
    }

    /// What may be spent here now: the hand plus the last-known global level (the `r` of the
    /// RateLimit field), and the age of that knowledge.
    pub fn remaining(&self, rate: Rate, now: Instant) -> (f64, Option<Duration>) {
        let age = self.known.map(|(_, at)| now.saturating_duration_since(at));
        ((self.hand + self.projected(rate, now)).min(rate.burst + self.hand.max(0.0)), age)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Rate = Rate { per_second: 50.0, burst: 10.0 };
    const W: Duration = Duration::from_millis(100);

    /// A store holding one global bucket, answering exchanges as the Lua script does.
    struct Store {
        rate: Rate,
        level: f64,
        at: Instant,
    }

    impl Store {
        fn exchange(&mut self, e: Exchange, now: Instant) -> Exchanged {
            let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
            self.level = (self.level + elapsed * self.rate.per_second).min(self.rate.burst);
            self.at = now;
            self.level = (self.level - e.settle).min(self.rate.burst);
            let granted =
                if e.want > 0.0 && self.level >= e.at_least { e.want.min(self.level).max(0.0) } else { 0.0 };
            self.level -= granted;
            Exchanged { granted, level: self.level }
        }
    }

    /// Replicas sharing one store, each request answered by the next replica in turn (a round
    /// robin balancer), exchanges answered after `rtt`.
    fn fleet(replicas: usize, offered_per_second: f64, seconds: f64, rtt: Duration) -> f64 {
        fleet_at(R, replicas, offered_per_second, seconds, rtt)
    }

    fn fleet_at(rate: Rate, replicas: usize, offered_per_second: f64, seconds: f64, rtt: Duration) -> f64 {
        let t0 = Instant::now();
        let mut store = Store { rate, level: rate.burst, at: t0 };
        let mut leases: Vec<Lease> = (0..replicas).map(|_| Lease::new(t0)).collect();
        let mut pending: Vec<(Instant, usize, Exchange)> = Vec::new();
        let n = (offered_per_second * seconds) as usize;
        let mut served = 0.0;
        for i in 0..n {
            let now = t0 + Duration::from_secs_f64(i as f64 / offered_per_second);
            pending.sort_by_key(|p| p.0);
            while let Some(&(due, r, e)) = pending.first() {
                if due > now {
                    break;
                }
                pending.remove(0);
                let reply = store.exchange(e, due);
                leases[r].settled(rate, reply, due);
            }
            let r = i % replicas;
            let (spend, exchange) = leases[r].spend(rate, 1.0, (replicas as u32, W), now);
            if spend == Spend::Spent {
                served += 1.0;
            }
            if let Some(e) = exchange {
                pending.push((now + rtt, r, e));
            }
        }
        served
    }

    #[test]
    fn one_replica_serves_the_burst_then_the_rate() {
        let served = fleet(1, 300.0, 10.0, Duration::from_micros(500));
        assert!((served - 510.0).abs() <= 510.0 * 0.05, "served {served}");
    }

    #[test]
    fn three_replicas_hold_the_caller_to_one_rate() {
        let served = fleet(3, 300.0, 10.0, Duration::from_micros(500));
        let bound = 510.0 + 3.0 * (1.0 + 1.0) + 3.0;
        assert!(served <= bound && served >= 510.0 * 0.9, "served {served}, bound {bound}");
    }

    #[test]
    fn twenty_replicas_with_a_lease_of_one_token_stay_within_the_bound() {
        let served = fleet(20, 300.0, 10.0, Duration::from_micros(500));
        let bound = 510.0 + 20.0 * 2.0;
        assert!(served <= bound && served >= 510.0 * 0.8, "served {served}, bound {bound}");
    }

    #[test]
    fn a_slow_store_does_not_let_more_through() {
        let served = fleet(3, 300.0, 10.0, Duration::from_millis(20));
        assert!(served <= 510.0 + 3.0 * 2.0 + 3.0, "served {served}");
    }

    #[test]
    fn a_caller_under_its_rate_is_served_in_full() {
        let served = fleet(3, 40.0, 10.0, Duration::from_micros(500));
        assert_eq!(served, 400.0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever the fleet's size, the caller's rate and burst, its demand and the store's
        /// latency: never more than burst + rate * T + replicas * (lease + one request).
        #[test]
        fn never_more_than_the_bound(
            replicas in 1usize..25, per_second in 1u32..400, burst in 1u32..50,
            demand in 0.5f64..8.0, rtt_us in 100u64..30_000,
        ) {
            let rate = Rate { per_second: f64::from(per_second), burst: f64::from(burst) };
            let seconds = 4.0;
            let served = fleet_at(rate, replicas, rate.per_second * demand, seconds, Duration::from_micros(rtt_us));
            let lease = (rate.per_second * W.as_secs_f64()).clamp(1.0, rate.burst);
            let bound = rate.burst + rate.per_second * seconds + replicas as f64 * (lease + 1.0);
            proptest::prop_assert!(served <= bound, "served {served} > bound {bound}");
        }
    }

    #[test]
    fn unspent_tokens_go_back_after_idle() {
        let t0 = Instant::now();
        let mut lease = Lease::new(t0);
        let (_, e) = lease.spend(R, 1.0, (1, W), t0);
        lease.settled(R, Exchanged { granted: e.unwrap().want, level: 5.0 }, t0);
        assert!(lease.hand > 0.0);
        assert_eq!(lease.give_back(t0 + Duration::from_millis(500)), None);
        let back = lease.give_back(t0 + IDLE).unwrap();
        assert!(back.settle < 0.0 && back.want == 0.0, "{back:?}");
        assert_eq!(lease.hand, 0.0);
    }

    #[test]
    fn a_failed_exchange_forgets_the_hand() {
        let t0 = Instant::now();
        let mut lease = Lease::new(t0);
        let (spend, e) = lease.spend(R, 1.0, (1, W), t0);
        assert!(spend == Spend::Spent && e.is_some());
        lease.failed();
        assert_eq!(lease.hand, 0.0);
        assert!(lease.known.is_none() && !lease.exchanging);
    }
}
