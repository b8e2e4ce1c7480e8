//! Logging: human-readable text or JSON lines, filtered by `log.level` (or `RUST_LOG`).
//! Nothing in drbgd logs output bytes or key material.
//!
//! Lines go through a non-blocking writer: request threads format a line and queue it; one
//! background thread writes them to stderr in batches, so a request costs no write syscall of
//! its own under load. The queue is bounded ([`QUEUE_LINES`] lines, so memory is bounded);
//! when the sink is slower than the traffic and the queue is full, request threads wait for
//! room — back-pressure, never a lost line (an access log with holes is no audit trail). The
//! [`LogGuard`] flushes every queued line when it is dropped at shutdown. ANSI colours only when
//! stderr is a terminal.

use std::io::IsTerminal;

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LogSettings};

/// Lines the writer queue holds before request threads wait: ~128 k lines of ~200 bytes, about
/// 25 MiB in the worst case, a few seconds of peak traffic.
pub const QUEUE_LINES: usize = 128_000;

/// Keeps the log writer running; dropping it flushes the queue (hold it until exit).
#[must_use = "dropping the guard stops the log writer"]
pub struct LogGuard(#[allow(dead_code)] Option<WorkerGuard>);

/// Installs the global subscriber (once; later calls are ignored and return an inert guard).
pub fn init(log: &LogSettings) -> LogGuard {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&log.level));
    let ansi = std::io::stderr().is_terminal();
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(QUEUE_LINES)
        .finish(std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    let installed = match log.format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    LogGuard(installed.is_ok().then_some(guard))
}
