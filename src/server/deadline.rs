//! The header-read, write-progress and HTTP/2 idle deadlines of one connection (see the
//! module documentation of [`super`]), each read from what the connection did
//! (`server/activity.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::activity::*;

/// The header-read deadline of one connection (see the module documentation).
pub(super) struct HeaderReadDeadline {
    pub(super) interval: tokio::time::Interval,
    pub(super) period: Duration,
    /// [`ConnState::activity`] at the last check.
    pub(super) seen: u64,
}

impl HeaderReadDeadline {
    pub(super) fn new(period: Duration) -> HeaderReadDeadline {
        let start = tokio::time::Instant::now();
        let first = start.checked_add(period).unwrap_or(start + Duration::from_secs(86_400));
        let mut interval = tokio::time::interval_at(first, period.max(Duration::from_millis(1)));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        HeaderReadDeadline { interval, period, seen: 0 }
    }

    /// Completes at the first check that finds the connection idle since the one before: no
    /// activity (see [`ConnState::activity`]), no response in progress, and no HTTP/2 request
    /// ever. Cancel-safe (a select branch).
    pub(super) async fn expired(&mut self, state: &ConnState) {
        loop {
            self.interval.tick().await;
            let activity = state.activity.load(Ordering::Relaxed);
            if activity == self.seen
                && state.open.load(Ordering::Relaxed) == 0
                && !state.h2.load(Ordering::Relaxed)
            {
                return;
            }
            self.seen = activity;
        }
    }

    /// Waits for a connection already asked to close: busy ones finish, one that sends no
    /// request head is still closed by the deadline (not kept to the drain deadline).
    pub(super) async fn finish<F: Future>(&mut self, connection: Pin<&mut F>, state: &ConnState) {
        tokio::select! {
            _ = connection => {}
            () = self.expired(state) => {}
        }
    }

    /// How long an idle connection, asked to close, may take to go (a GOAWAY to be written;
    /// an HTTP/1 connection with half a head buffered ignores the request) before it is dropped.
    pub(super) fn close_grace(&self) -> Duration {
        self.period.min(Duration::from_secs(1))
    }
}

/// The write-progress and HTTP/2 idle deadlines of one connection (see the module
/// documentation), checked every quarter of the shorter one.
pub(super) struct Quiet {
    pub(super) interval: tokio::time::Interval,
    pub(super) write_timeout: Duration,
    h2_idle: Duration,
    /// [`ConnState::progress`] at the last check, and since when it has not moved.
    pub(super) progress: (u64, tokio::time::Instant),
    /// [`ConnState::streams`] at the last check, and since when it has not moved.
    pub(super) streams: (u64, tokio::time::Instant),
}

/// Why [`Quiet::expired`] ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Quieted {
    /// A response body made no progress for the write timeout.
    Stalled,
    /// An HTTP/2 connection had no open stream for the idle timeout.
    Idle,
}

impl Quiet {
    pub(super) fn new(write_timeout: Duration, h2_idle: Duration) -> Quiet {
        let period = (write_timeout.min(h2_idle) / 4).max(Duration::from_millis(1));
        let start = tokio::time::Instant::now();
        let mut interval = tokio::time::interval_at(start + period, period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Quiet { interval, write_timeout, h2_idle, progress: (0, start), streams: (0, start) }
    }

    /// Completes at the first check that finds a response body stalled, or an HTTP/2
    /// connection idle. Cancel-safe (a select branch).
    pub(super) async fn expired(&mut self, state: &ConnState) -> Quieted {
        loop {
            self.interval.tick().await;
            let now = tokio::time::Instant::now();
            // How long each counter has stood still.
            let still = |last: &mut (u64, tokio::time::Instant), counter: &AtomicU64| {
                let value = counter.load(Ordering::Relaxed);
                if value != last.0 {
                    *last = (value, now);
                }
                now.duration_since(last.1)
            };
            let unmoved = still(&mut self.progress, &state.progress);
            let no_streams = still(&mut self.streams, &state.streams);
            let held_up = state.bodies.load(Ordering::Relaxed) > state.waiting.load(Ordering::Relaxed);
            if held_up && unmoved >= self.write_timeout {
                return Quieted::Stalled;
            }
            if state.open.load(Ordering::Relaxed) == 0
                && state.h2.load(Ordering::Relaxed)
                && no_streams >= self.h2_idle
            {
                return Quieted::Idle;
            }
        }
    }
}
