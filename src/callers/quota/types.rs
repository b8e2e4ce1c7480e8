//! The quota's plain data, shared by the buckets, the leases, every store and the rate-limit
//! fields: which bucket ([`Kind`]), its parameters ([`Rate`]), a caller's limits ([`Quota`]),
//! and why a take was refused ([`Wait`], [`Refusal`]). It names nothing else of the crate.

use std::time::Duration;

/// Which of a caller's buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Requests.
    Requests,
    /// Raw random bytes.
    Bytes,
}

impl Kind {
    /// Both, in the order of a caller's [`Quota`].
    pub const ALL: [Kind; 2] = [Kind::Requests, Kind::Bytes];

    /// The bucket's name (in the shared store's keys and the rate-limit fields).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Requests => "requests",
            Kind::Bytes => "bytes",
        }
    }
}

/// One bucket's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens per second.
    pub per_second: f64,
    /// Bucket size.
    pub burst: f64,
}

/// A refused take: how long until it would pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wait(pub Duration);

/// Why a bucket refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refusal {
    /// Not enough tokens: how long until there would be.
    Wait(Wait),
    /// The shared store is down and `quota.on_store_failure = "closed"`.
    StoreUnavailable,
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

    /// The rate of the `kind` bucket, when it is limited.
    pub fn rate(&self, kind: Kind) -> Option<Rate> {
        match kind {
            Kind::Requests => self.requests,
            Kind::Bytes => self.bytes,
        }
    }
}
