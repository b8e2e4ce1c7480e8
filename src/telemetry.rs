//! Logging: human-readable text or JSON lines, filtered by `log.level` (or `RUST_LOG`), and
//! with `log.audit` one JSON audit line per API request on its own target ([`Audit`]).
//! Nothing in drbgd logs output bytes or key material.
//!
//! Lines go through [`writer`]: request threads append a formatted line to a bounded queue;
//! one background thread writes it to stderr in batches (a few milliseconds' worth, so no
//! request makes a write syscall of its own, and under load one `write` carries hundreds of
//! lines). No thread that logs ever waits: when the sink is slower than the traffic and the
//! queue is full, access and diagnostic lines are dropped and counted
//! (`drbgd_log_lines_dropped_total`), and audit lines are kept while new API requests are
//! refused (503 `audit_unavailable`, see [`audit_unavailable`]). Dropping the [`LogGuard`] at exit
//! writes the queue (waiting at most [`writer::EXIT_WAIT`] for a stalled sink). ANSI colours
//! only when stderr is a terminal; off one, text lines go through [`plain::Plain`], the same
//! line formatted at a fraction of the cost.

mod access;
mod plain;
pub mod request_id;
pub mod trace;
mod writer;

use std::io::IsTerminal;
use std::sync::OnceLock;

use tracing_subscriber::filter::{self, FilterExt};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, fmt};

pub use access::{ACCESS_TARGET, Access};

use crate::config::tracing::TracingSettings;
use crate::config::{LogFormat, LogSettings};

/// Keeps the log writer (and the trace exporter, when traces are on) running; dropping it
/// exports the queued spans, then flushes the log queue (hold it until exit).
#[must_use = "dropping the guard stops the log writer"]
pub struct LogGuard {
    // Dropped in this order: spans first, so the exporter's last words reach the log.
    _traces: Option<trace::TraceGuard>,
    _writer: Option<writer::WriterGuard>,
}

/// Installs the global subscriber (once; later calls are ignored and return an inert guard),
/// with the OpenTelemetry layer when `traces` (or the `OTEL_*` variables) name a collector.
/// Fails when the writer's thread cannot be started, or the trace exporter cannot be built.
pub fn init(log: &LogSettings, traces: &TracingSettings) -> std::io::Result<LogGuard> {
    let make_filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&log.level));
    let filter = make_filter();
    // Directives on spans or fields (`[...]`) decide per event: access lines then go through
    // tracing like every other line.
    let static_filter = !filter.to_string().contains('[');
    let ansi = std::io::stderr().is_terminal();
    let (writer, guard) = writer::spawn(std::io::stderr())?;
    let writer_for_access = writer.clone();
    let (installed, traces) = match trace::layer::<tracing_subscriber::Registry>(traces)? {
        // No OpenTelemetry layer at all with traces off: a layer that is there but does
        // nothing (`None`) would still make the registry build every disabled span.
        None => {
            (tracing_subscriber::registry().with(log_layers(log, filter, &writer, ansi)).try_init(), None)
        }
        Some((otel, guard)) => {
            let installed = tracing_subscriber::registry()
                .with(otel)
                .with(log_layers(log, filter, &writer, ansi))
                .try_init();
            (installed, Some(guard))
        }
    };
    if installed.is_ok() {
        let _ = INSTALLED.set(writer_for_access.clone());
    }
    if installed.is_ok() && log.format == LogFormat::Text && !ansi && static_filter {
        let on = access_enabled(make_filter());
        let _ = PLAIN_ACCESS.set(PlainAccess { writer: writer_for_access, on });
    }
    let installed = installed.is_ok();
    if let (true, Some(traces)) = (installed, &traces) {
        tracing::info!("traces on: exporting over OTLP, {}", traces.description);
    }
    if trace::refused_tls() {
        tracing::error!(
            "traces off: an OTEL_EXPORTER_OTLP_* variable names an https:// collector, and no TLS client is built in (send plain OTLP to a collector on the node or in the pod)"
        );
    }
    Ok(LogGuard { _traces: traces.filter(|_| installed), _writer: installed.then_some(guard) })
}

/// The log layers over `S`: the main one (every line but the audit lines and the trace
/// spans, which are the OpenTelemetry layer's), and with `log.audit` the audit layer (JSON
/// whatever `log.format` says).
fn log_layers<S>(
    log: &LogSettings,
    filter: EnvFilter,
    writer: &writer::BatchWriter,
    ansi: bool,
) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    let main = fmt::layer().with_writer(writer.clone()).with_ansi(ansi);
    let main = match log.format {
        LogFormat::Json => main.json().flatten_event(true).boxed(),
        LogFormat::Text if ansi => main.boxed(),
        LogFormat::Text => main.event_format(plain::Plain).boxed(),
    };
    let not_trace = filter::filter_fn(|m| m.target() != trace::TRACE_TARGET);
    if log.audit {
        let not_audit = filter::filter_fn(|m| m.target() != AUDIT_TARGET);
        let audit = fmt::layer().with_writer(writer.for_audit()).with_ansi(false).json().flatten_event(true);
        main.with_filter(filter.and(not_audit).and(not_trace))
            .and_then(
                audit.with_filter(filter::Targets::new().with_target(AUDIT_TARGET, tracing::Level::INFO)),
            )
            .boxed()
    } else {
        // No audit lines: one layer, one filter (no second layer to offer every event to).
        main.with_filter(filter.and(not_trace)).boxed()
    }
}

/// Set by [`init`] when text lines are plain (no ANSI) and the filter has static directives
/// only: access lines then skip tracing's dispatch and field visiting and go to the writer's
/// queue formatted as [`plain::Plain`] formats their event (a test holds the two equal). With
/// tracing's own text formatter instead, a `/token` request takes 33.5k instructions instead of
/// 20.6k and serves 0.91× the requests/s (benches/README.md). Whether they are written at
/// all is the filter's answer for `drbgd::access` at INFO, asked once at start-up (static
/// directives answer the same for every event, and the filter is never reloaded). Asking per
/// line with `enabled!` would not do: under per-layer filtering it leaves the layer's verdict
/// behind for the next event on the thread.
static PLAIN_ACCESS: OnceLock<PlainAccess> = OnceLock::new();

#[derive(Debug)]
struct PlainAccess {
    writer: writer::BatchWriter,
    /// The filter lets `drbgd::access` through at INFO.
    on: bool,
}

/// Whether `filter` (static directives only) lets access lines through, asked of a throwaway
/// subscriber where it is the only, global filter.
fn access_enabled(filter: EnvFilter) -> bool {
    let probe = tracing_subscriber::registry().with(filter);
    tracing::subscriber::with_default(
        probe,
        || tracing::enabled!(target: ACCESS_TARGET, tracing::Level::INFO),
    )
}

/// The writer of the installed subscriber, for its counters.
static INSTALLED: OnceLock<writer::BatchWriter> = OnceLock::new();

/// Lines dropped so far because the log sink could not keep up.
pub fn lines_dropped() -> u64 {
    INSTALLED.get().map_or(0, writer::BatchWriter::lines_dropped)
}

/// Whether an audited request must be refused now: audit lines are on and the log queue is
/// past its soft limit (the sink is not keeping up), so its audit line might not be written
/// soon. Served requests are never unaudited: they are refused instead, as Vault does.
pub fn audit_unavailable(audit: bool) -> bool {
    audit && INSTALLED.get().is_some_and(writer::BatchWriter::backlogged)
}

impl Access<'_> {
    /// Writes the line (if the filter lets `drbgd::access` at INFO through).
    pub fn log(&self) {
        match PLAIN_ACCESS.get() {
            Some(PlainAccess { writer, on: true }) => plain::write_access(writer, self),
            Some(PlainAccess { on: false, .. }) => {}
            None => self.event(),
        }
    }

    /// The audit line of the same request (`transport`: `http`).
    pub fn audit(&self, transport: &'static str) -> Audit<'_> {
        let Access { request_id, trace_id, caller, route, alg, n, status, code, .. } = *self;
        Audit { transport, request_id, trace_id, caller, route, alg, n, status, code, serial: "", ticket: "" }
    }

    /// The line as a tracing event (JSON lines, a terminal, tests).
    fn event(&self) {
        let Access { request_id, trace_id, caller, method, route, alg, n, status, code, latency_us } = *self;
        if trace_id.is_empty() {
            tracing::info!(
                target: ACCESS_TARGET,
                request_id, caller, method, route, alg, n, status, code, latency_us,
                "request"
            );
        } else {
            tracing::info!(
                target: ACCESS_TARGET,
                request_id, trace_id, caller, method, route, alg, n, status, code, latency_us,
                "request"
            );
        }
    }
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
    /// The OpenTelemetry trace id, empty with traces off (the field is then left out).
    pub trace_id: &'a str,
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
    /// The serial of the signed receipt served, empty for none (the field is then left out).
    pub serial: &'a str,
    /// The ticket the draw used, empty for none (the field is then left out).
    pub ticket: &'a str,
}

impl<'a> Audit<'a> {
    /// The same line naming the serial of the receipt served and the ticket it used (empty:
    /// none).
    #[must_use]
    pub fn with_receipt(self, serial: &'a str, ticket: &'a str) -> Self {
        Audit { serial, ticket, ..self }
    }

    /// Writes the line.
    pub fn log(&self) {
        let Audit { transport, request_id, trace_id, caller, route, alg, n, status, code, serial, ticket } =
            *self;
        // Fields recorded only when there is a receipt, a ticket.
        let serial = (!serial.is_empty()).then_some(serial);
        let ticket = (!ticket.is_empty()).then_some(ticket);
        if trace_id.is_empty() {
            tracing::info!(
                target: AUDIT_TARGET,
                transport, request_id, caller, route, alg, n, status, code, serial, ticket,
                "audit"
            );
        } else {
            tracing::info!(
                target: AUDIT_TARGET,
                transport, request_id, trace_id, caller, route, alg, n, status, code, serial, ticket,
                "audit"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_lines_follow_static_filters() {
        let on = |directives: &str| access_enabled(EnvFilter::new(directives));
        assert!(on("info"));
        assert!(on("warn,drbgd::access=info"));
        assert!(on("drbgd=debug"));
        assert!(!on("warn"));
        assert!(!on("info,drbgd::access=warn"));
        assert!(!on("info,drbgd=off"));
    }
}
