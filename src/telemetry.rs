//! Logging: human-readable text or JSON lines, filtered by `log.level` (or `RUST_LOG`).
//! Nothing in drbgd logs output bytes or key material.
//!
//! Lines go through tracing-appender's non-blocking writer: request threads format a line and
//! queue it; one background thread writes them to stderr through a 64 KiB buffer, flushed at the
//! end of each batch, so no request makes a write syscall of its own. The queue is bounded
//! ([`QUEUE_LINES`] lines, so memory is bounded); when the sink is slower than the traffic and
//! the queue is full, request threads wait for room — back-pressure, never a dropped line.
//! Dropping the [`LogGuard`] at exit flushes the queue; tracing-appender gives that flush one
//! second, so with a sink stalled at exit the lines still queued after that second are lost (a
//! writer of our own that waited without a limit measured 40 % fewer requests/s, see
//! benches/README.md). ANSI colours only when stderr is a terminal.

use std::io::{BufWriter, IsTerminal};

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LogSettings};

/// Lines the queue holds before request threads wait: a few seconds of peak traffic, about
/// 2 MiB of ~200-byte lines.
pub const QUEUE_LINES: usize = 10_000;
/// Bytes buffered by the writer thread between flushes.
const WRITE_BUFFER: usize = 64 << 10;

/// Keeps the log writer running; dropping it flushes the queue (hold it until exit).
#[must_use = "dropping the guard stops the log writer"]
pub struct LogGuard(#[allow(dead_code)] Option<WorkerGuard>);

/// Installs the global subscriber (once; later calls are ignored and return an inert guard).
pub fn init(log: &LogSettings) -> LogGuard {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&log.level));
    let ansi = std::io::stderr().is_terminal();
    let sink = BufWriter::with_capacity(WRITE_BUFFER, std::io::stderr());
    let (writer, guard) =
        NonBlockingBuilder::default().lossy(false).buffered_lines_limit(QUEUE_LINES).finish(sink);
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    let installed = match log.format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    LogGuard(installed.is_ok().then_some(guard))
}
