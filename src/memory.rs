//! Gives freed heap memory back to the OS after a burst. glibc's allocator keeps what a burst
//! of large responses freed (1,000 concurrent 10^7-bit streams left the process at 103 MiB
//! resident a minute later, against 8 MiB before); `malloc_trim(0)` returns every free page of
//! every arena. No crate wraps it (it is one libc call), so it is called here, from a task that
//! looks every [`PERIOD`] and trims when no HTTP request is in progress and the resident set
//! has grown by [`GROWTH`] since the last trim. On other targets the task does nothing.

use std::time::Duration;

use crate::metrics::Metrics;

/// How often the task looks.
pub const PERIOD: Duration = Duration::from_secs(10);

/// Resident growth since the last trim that makes the next quiet moment trim.
pub const GROWTH: u64 = 8 << 20;

/// Runs for ever (see the module documentation).
pub async fn trim_when_idle(metrics: std::sync::Arc<Metrics>) {
    let mut interval = tokio::time::interval(PERIOD);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut after_last_trim = resident_bytes().unwrap_or(0);
    loop {
        interval.tick().await;
        let Some(now) = resident_bytes() else { return };
        if metrics.in_flight.get() == 0 && now > after_last_trim + GROWTH {
            trim();
            after_last_trim = resident_bytes().unwrap_or(now);
            tracing::debug!(before = now, after = after_last_trim, "returned free heap memory to the OS");
        }
    }
}

/// The resident set size (`/proc/self/statm`, pages of 4 KiB on the targets that trim).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim takes no pointer and is safe to call at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
