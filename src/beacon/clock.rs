//! Which round is due when, as drand counts: round 1 at the genesis time, round `r` at
//! `genesis + (r - 1) * period`, none before genesis. The time is always an argument, so the
//! tests choose it.

use std::time::Duration;

/// Time since the Unix epoch ([`wall_clock`] in the server).
pub type UnixTime = Duration;

/// The wall clock, as every schedule in the server reads it (the tests pass their own times).
pub fn wall_clock() -> UnixTime {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default()
}

/// A chain's clock: its genesis time and period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Unix seconds at which round 1 is due (positive: validated with the settings).
    pub genesis_time: u64,
    /// Seconds between rounds (positive).
    pub period_s: u32,
}

/// When a round may be served, at some time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Due: served (and, once served, the same for ever).
    Due,
    /// The round after the current one, due in `wait` (at most a period): worth waiting for.
    Next {
        /// Time until it is due.
        wait: Duration,
    },
    /// Further ahead than the next round: refused (425 Too Early), due in `wait`
    /// ([`Duration::MAX`] for a round whose time does not fit in a `u64` of seconds).
    TooEarly {
        /// Time until it is due.
        wait: Duration,
    },
}

impl Schedule {
    /// The latest round due at `now`: 0 before genesis.
    pub fn round_at(&self, now: UnixTime) -> u64 {
        let now_s = now.as_secs();
        if now_s < self.genesis_time || self.period_s == 0 {
            return 0;
        }
        (now_s - self.genesis_time) / u64::from(self.period_s) + 1
    }

    /// Unix seconds at which `round` is due (`None` past `u64`'s range); round 0 (none) is
    /// given genesis, as drand does.
    pub fn due_at(&self, round: u64) -> Option<u64> {
        let periods = round.saturating_sub(1).checked_mul(u64::from(self.period_s))?;
        self.genesis_time.checked_add(periods)
    }

    /// Time from `now` until `round` is due: zero for a round already due, [`Duration::MAX`]
    /// for one past `u64`'s range of seconds.
    pub fn until(&self, round: u64, now: UnixTime) -> Duration {
        match self.due_at(round) {
            Some(due) => Duration::from_secs(due).saturating_sub(now),
            None => Duration::MAX,
        }
    }

    /// Whether `round` may be served at `now` (see [`Timing`]).
    pub fn timing(&self, round: u64, now: UnixTime) -> Timing {
        let current = self.round_at(now);
        if round <= current {
            Timing::Due
        } else if round == current + 1 {
            Timing::Next { wait: self.until(round, now) }
        } else {
            Timing::TooEarly { wait: self.until(round, now) }
        }
    }
}
