//! A replica's lease on one of a caller's buckets in the shared store: tokens taken from the
//! global bucket ahead of use and spent here without a round trip. This is the decision logic
//! alone (time is passed in); [`super::redis_store`] carries out the exchanges it asks for.
//!
//! A request is let through when the tokens in hand cover it, or else on credit: what this
//! replica owes (settled or not yet) stays within its share of the global bucket's last-known
//! level (projected forward at the caller's rate, divided among the live replicas; a full
//! bucket before the store has answered the lease once), or, when that share is less, a request
//! of up to a replica's share of the burst, or one token. Credit is settled with the store at
//! once. When the hand runs
//! below half a lease, an exchange tops it up to a lease sized to this replica's recent use
//! (`lease_ms` of it), at most half its share of the burst (`burst / (2 * replicas)`), at
//! least one request.
//!
//! The bound: every token spent is charged to the global bucket (from a lease or as a settled
//! debt), and the global bucket never holds more than its burst plus the rate times the time
//! elapsed. So over any interval `T` a caller gets at most
//! `burst + rate * T` plus what sits in hands and on credit across the fleet: leases of at
//! most `burst / (2 * replicas)` each, credit of at most a replica's share of a level that is
//! at most the burst (or one token) each, so `2.5 * burst + rate * T + replicas` tokens in the
//! worst case; the tests measure it within a few percent of `burst + rate * T`. Under-use is bounded the same way (tokens sitting in other
//! replicas' hands), and unused hands go back to the store after [`IDLE`].

use std::time::Duration;

use tokio::time::Instant;

use super::types::{Rate, Wait};

/// Unspent tokens go back to the store after this long without a spend.
pub const IDLE: Duration = Duration::from_secs(1);
/// A bucket the store answered with garbage is not used for this long.
pub const BROKEN: Duration = Duration::from_secs(1);

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

/// The store's answer to an [`Exchange`], as [`super::redis_store`] lets it through: the grant at
/// most the exchange's `want`, the level within one burst either side of zero.
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
    /// The last request's cost, up to the burst: the least worth taking.
    need: f64,
    /// The store answered this bucket's key with something that is not a bucket: until then
    /// the caller's requests meet the fallback (the store itself is fine).
    broken_until: Option<Instant>,
    /// The lease size: this replica's recent use over `window`.
    size: f64,
    /// Spent since `since` (for the size).
    spent: f64,
    since: Instant,
    /// The last spend.
    last_spend: Instant,
    /// The lease duration.
    window: Duration,
    /// Replicas alive, as last told.
    replicas: u32,
}

impl Lease {
    /// An empty lease (its duration is given with each spend).
    pub fn new(now: Instant) -> Self {
        Lease {
            hand: 0.0,
            known: None,
            exchanging: false,
            settling: 0.0,
            need: 1.0,
            broken_until: None,
            size: 1.0,
            spent: 0.0,
            since: now,
            last_spend: now,
            window: Duration::from_millis(100),
            replicas: 1,
        }
    }

    /// The global level projected to `now` (full when never seen): as of the last exchange,
    /// before what this replica owes or is settling.
    fn projected(&self, rate: Rate, now: Instant) -> f64 {
        match self.known {
            None => rate.burst,
            Some((level, at)) => {
                let elapsed = now.saturating_duration_since(at).as_secs_f64();
                (level + elapsed * rate.per_second).min(rate.burst)
            }
        }
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
        self.replicas = replicas;
        // A burst cut by a reload applies at once: tokens in hand above it are dropped.
        self.hand = self.hand.min(rate.burst);
        let need = cost.min(rate.burst);
        self.need = need;
        let projected = self.projected(rate, now);
        // Paid from the hand, or on credit: what is owed (settled or not yet) stays within this
        // replica's share of the level the store last held (before it has answered this lease
        // once, of a full bucket), so that the credit of all replicas together stays within
        // it. A request up to a replica's share of the burst may go on credit when the share of
        // the level is less, and so may one token (twenty replicas of a caller with a burst of
        // ten), never a byte request over the share of the burst.
        let n = f64::from(replicas.max(1));
        let share = projected / n;
        let floor = need.min(rate.burst / n).max(need.min(1.0));
        let credit = if projected + 1e-9 >= need { share.max(floor) } else { 0.0 };
        let owed = (-self.hand).max(0.0) + self.settling;
        let shortfall = cost - self.hand.max(0.0);
        let paid = self.hand + 1e-9 >= cost || owed + shortfall <= credit + 1e-9;
        if !paid {
            // Until the share of the refilling level covers what is owed and this request.
            let short = n * (owed + shortfall) - projected;
            let wait = (short.max(0.0) / rate.per_second).clamp(0.001, 86_400.0);
            // Learn the level again when what we know is older than a lease (or unknown).
            let stale = self.known.is_none_or(|(_, at)| now.saturating_duration_since(at) >= self.window);
            let exchange = (stale && !self.exchanging).then(|| self.begin(rate, need));
            return (Spend::Refused(Wait(Duration::from_secs_f64(wait))), exchange);
        }
        self.hand -= cost;
        self.spent += cost;
        // (Requests pass their start, which may be a little older than the last spend's.)
        self.last_spend = self.last_spend.max(now);
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
    ///
    /// Returns the next exchange to make at once, if any: to settle credit spent while this
    /// one was under way, or to top up a lease still below half after a grant (a caller
    /// spending faster than one exchange per lease). None after a refusal with nothing owed:
    /// a caller over its rate is not chased with exchanges (refusals ask again once what is
    /// known is a lease old).
    pub fn settled(&mut self, rate: Rate, reply: Exchanged, now: Instant) -> Option<Exchange> {
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
            // At most half this replica's share of the burst: what sits in hands fleet-wide
            // stays under half the burst.
            let most = (rate.burst / (2.0 * f64::from(self.replicas.max(1)))).max(1.0);
            self.size = (use_rate * self.window.as_secs_f64()).clamp(1.0, most);
            self.spent = 0.0;
            self.since = now;
        }
        let low = reply.granted > 0.0 && self.hand < self.size / 2.0;
        (self.hand < 0.0 || low).then(|| self.begin(rate, self.need))
    }

    /// The exchange failed (unreachable, too slow, or a reply that is not a bucket) at `now`.
    /// What it was settling is owed again (a call that timed out after the store ran it is
    /// charged twice: the error is on the side of less, never of more), the tokens in hand
    /// stay (they were charged when granted), and the level is taken as empty as of now, so
    /// credit comes back only as the bucket would refill.
    pub fn failed(&mut self, now: Instant) {
        self.exchanging = false;
        self.broken_until = None;
        self.hand -= self.settling;
        self.settling = 0.0;
        self.known = Some((0.0, now));
    }

    /// As [`Lease::failed`], the store having answered something that is not a bucket: the
    /// lease is not used for [`BROKEN`] (the caller's requests meet the fallback), then an
    /// exchange tries the key again.
    pub fn broken(&mut self, now: Instant) {
        self.failed(now);
        self.broken_until = Some(now + BROKEN);
    }

    /// Whether the store's bucket was found broken less than [`BROKEN`] ago.
    pub fn is_broken(&self, now: Instant) -> bool {
        self.broken_until.is_some_and(|until| now < until)
    }

    /// An exchange is under way.
    pub fn is_exchanging(&self) -> bool {
        self.exchanging
    }

    /// After [`IDLE`] without a spend, gives back unspent tokens or settles what is owed: the
    /// exchange to start.
    pub fn give_back(&mut self, now: Instant) -> Option<Exchange> {
        if self.exchanging || self.hand == 0.0 || now.saturating_duration_since(self.last_spend) < IDLE {
            return None;
        }
        self.give_back_now()
    }

    /// Gives back every unspent token now and settles what is owed (shutdown): the exchange to
    /// start, if there is anything to exchange and no exchange is under way.
    pub fn give_back_now(&mut self) -> Option<Exchange> {
        if self.hand == 0.0 || self.exchanging {
            return None;
        }
        self.exchanging = true;
        let back = self.hand;
        self.hand = 0.0;
        // A debt being settled is owed again if the call fails; tokens given back are not
        // taken back (lost, on the side of less).
        self.settling = (-back).max(0.0);
        Some(Exchange { settle: -back, want: 0.0, at_least: 0.0 })
    }

    /// What may be spent here now: the hand plus the last-known global level less what is owed
    /// (the `r` of the RateLimit field).
    pub fn remaining(&self, rate: Rate, now: Instant) -> f64 {
        let owed = (-self.hand).max(0.0) + self.settling;
        let level = (self.projected(rate, now) - owed).max(0.0);
        (self.hand.max(0.0) + level).min(rate.burst)
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
                if let Some(next) = leases[r].settled(rate, reply, due) {
                    pending.push((due + rtt, r, next));
                }
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

    /// A store slow to answer (or replicas slow to hear it: a busy host) lets little more
    /// through: the two replicas of a 1/s caller with a burst of 20, asked 2,000 times a
    /// second, serve about the burst whatever the round trip.
    #[test]
    fn a_slow_round_trip_lets_no_more_through() {
        for rtt_us in [100u64, 1_000, 5_000, 20_000] {
            let rate = Rate { per_second: 1.0, burst: 20.0 };
            let served = fleet_at(rate, 2, 2000.0, 0.03, Duration::from_micros(rtt_us));
            // The bound allows 2.5 bursts; what credit on a stale level costs in practice is a
            // fraction of one (23 at 5 ms when written).
            assert!(served <= 1.25 * rate.burst + 2.0, "rtt {rtt_us} µs: served {served}");
        }
    }

    /// A lone new replica of a caller with a burst of 5 serves the 5 at once, however slow
    /// the store's first answer (what it owes and is settling is counted once).
    #[test]
    fn a_cold_replica_serves_the_burst_before_the_store_answers() {
        for rtt_us in [100u64, 1_000, 5_000] {
            let served = fleet_at(
                Rate { per_second: 1.0, burst: 5.0 },
                1,
                2000.0,
                0.01,
                Duration::from_micros(rtt_us),
            );
            assert_eq!(served, 5.0, "rtt {rtt_us} µs");
        }
    }

    /// A byte request larger than the replica's share is never taken on credit (twenty
    /// replicas would each take one against the same burst): it waits for a lease, which the
    /// refusal asks for.
    #[test]
    fn a_large_byte_request_is_not_taken_on_credit() {
        let t0 = Instant::now();
        let bytes = Rate { per_second: 1_000_000.0, burst: 1_000_000.0 };
        let mut lease = Lease::new(t0);
        // A cold replica: 60,000 bytes is more than a twentieth of the burst.
        let (spend, e) = lease.spend(bytes, 60_000.0, (20, W), t0);
        assert!(matches!(spend, Spend::Refused(_)), "{spend:?}");
        let e = e.expect("the refusal asks the store");
        assert_eq!(e.want, 60_000.0);
        // A small one goes on credit meanwhile (a twentieth of a bucket taken as full).
        assert_eq!(lease.spend(bytes, 16.0, (20, W), t0).0, Spend::Spent);
        let _ = lease.settled(bytes, Exchanged { granted: e.want, level: 900_000.0 }, t0);
        // Now in hand.
        assert_eq!(lease.spend(bytes, 60_000.0, (20, W), t0).0, Spend::Spent);
        // The share of the level is 45,000: a megabyte is refused, 40,000 go on credit.
        assert!(matches!(lease.spend(bytes, 1_000_000.0, (20, W), t0).0, Spend::Refused(_)));
        assert_eq!(lease.spend(bytes, 40_000.0, (20, W), t0).0, Spend::Spent);
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
        /// latency: never more than burst + rate * T + replicas * (lease + credit).
        #[test]
        fn never_more_than_the_bound(
            replicas in 1usize..25, per_second in 1u32..400, burst in 1u32..50,
            demand in 0.5f64..8.0, rtt_us in 100u64..30_000,
        ) {
            let rate = Rate { per_second: f64::from(per_second), burst: f64::from(burst) };
            let seconds = 4.0;
            let served = fleet_at(rate, replicas, rate.per_second * demand, seconds, Duration::from_micros(rtt_us));
            let lease = (rate.burst / (2.0 * replicas as f64)).max(1.0);
            let credit = (rate.burst / replicas as f64).max(1.0);
            let bound = rate.burst + rate.per_second * seconds + replicas as f64 * (lease + credit);
            proptest::prop_assert!(served <= bound, "served {served} > bound {bound}");
        }
    }

    #[test]
    fn unspent_tokens_go_back_after_idle() {
        let t0 = Instant::now();
        let mut lease = Lease::new(t0);
        let (_, e) = lease.spend(R, 1.0, (1, W), t0);
        assert_eq!(lease.settled(R, Exchanged { granted: e.unwrap().want, level: 5.0 }, t0), None);
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
        lease.failed(t0);
        // What the failed exchange was settling is owed again, the level is taken as empty.
        assert_eq!(lease.hand, -1.0);
        assert_eq!(lease.known, Some((0.0, t0)));
        assert!(!lease.exchanging);
        // No credit until the bucket would have refilled enough to cover what is owed and the
        // request; then exchanges resume, settling both.
        let (spend, e) = lease.spend(R, 1.0, (1, W), t0 + Duration::from_millis(1));
        assert!(matches!(spend, Spend::Refused(_)) && e.is_none(), "{spend:?} {e:?}");
        let (spend, e) = lease.spend(R, 1.0, (1, W), t0 + W);
        assert_eq!(spend, Spend::Spent);
        let e = e.expect("an exchange after the failure");
        assert!((e.settle - 2.0).abs() < 1e-9, "{e:?}");
    }
}
