//! Logging: human-readable text or JSON lines, filtered by `log.level` (or `RUST_LOG`), and
//! with `log.audit` one JSON audit line per API request on its own target ([`Audit`]).
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
//! benches/README.md). ANSI colours only when stderr is a terminal; off one, text lines go
//! through [`plain::Plain`], the same line formatted at a fraction of the cost.

mod plain;

use std::io::{BufWriter, IsTerminal};

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::filter::{self, FilterExt};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, fmt};

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
    let main = fmt::layer().with_writer(writer.clone()).with_ansi(ansi);
    let main = match log.format {
        LogFormat::Json => main.json().flatten_event(true).boxed(),
        LogFormat::Text if ansi => main.boxed(),
        LogFormat::Text => main.event_format(plain::Plain).boxed(),
    };
    let installed = if log.audit {
        // Audit lines are JSON whatever log.format says, and only on their own layer.
        let not_audit = filter::filter_fn(|m| m.target() != AUDIT_TARGET);
        let audit = fmt::layer().with_writer(writer).with_ansi(false).json().flatten_event(true);
        tracing_subscriber::registry()
            .with(main.with_filter(filter.and(not_audit)))
            .with(audit.with_filter(filter::Targets::new().with_target(AUDIT_TARGET, tracing::Level::INFO)))
            .try_init()
    } else {
        // No audit lines: one layer, one filter (no second layer to offer every event to).
        tracing_subscriber::registry().with(main.with_filter(filter)).try_init()
    };
    LogGuard(installed.is_ok().then_some(guard))
}

/// The tracing target of audit lines.
pub const AUDIT_TARGET: &str = "drbgd::audit";

/// One audit line: who asked for what and what they got, never the output, a key or a
/// certificate. Written as JSON on [`AUDIT_TARGET`] (with `log.audit` on).
#[derive(Debug, Clone, Copy)]
pub struct Audit<'a> {
    /// `http` or `grpc`.
    pub transport: &'static str,
    /// The request id (`X-Request-Id`).
    pub request_id: &'a str,
    /// The caller's name (`unknown` for credentials that name none).
    pub caller: &'a str,
    /// The route template or gRPC method.
    pub route: &'a str,
    /// The algorithm that served (`none` when nothing was generated).
    pub alg: &'a str,
    /// Random bits served.
    pub n: u64,
    /// HTTP status, or the gRPC code as a number.
    pub status: u16,
    /// The error's machine code, empty on success.
    pub code: &'a str,
}

impl Audit<'_> {
    /// Writes the line.
    pub fn log(&self) {
        let Audit { transport, request_id, caller, route, alg, n, status, code } = *self;
        tracing::info!(target: AUDIT_TARGET, transport, request_id, caller, route, alg, n, status, code, "audit");
    }
}
