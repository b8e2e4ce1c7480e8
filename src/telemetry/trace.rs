//! OpenTelemetry traces: a server span per API request (REST and gRPC alike, opened by the
//! call pipeline), continuing the caller's W3C `traceparent`/`tracestate`, with admission,
//! generation, encoding and reseed spans inside it; exported over OTLP (gRPC or
//! HTTP/protobuf). Off unless `[tracing]` or the standard variables name a collector; then
//! no span is created at all (each span site costs one check of tracing's cached interest).
//!
//! The spans are ordinary `tracing` spans on the target [`TRACE_TARGET`] (the generators, which
//! must not depend on this module, name it as a literal), turned into OpenTelemetry spans by
//! `tracing-opentelemetry`; the log layers never see them. They carry the route, method,
//! caller, algorithm, bits, status and error code: never output bytes, keys or credentials.
//!
//! Export is this module's own small span processor, not the SDK's batch processor, for two
//! measured needs: the SDK counts the spans its full queue drops in a private field (drbgd
//! exports the count, `drbgd_trace_spans_total{outcome="dropped"}`), and it exports from a
//! thread with no tokio runtime, where tonic's and hyper's clients cannot run. Here finished
//! spans go to a bounded queue (`try_send`: a full queue drops, never blocks a request), and
//! one thread with a current-thread runtime of its own exports them in batches of up to
//! [`MAX_BATCH`], at least every `export_interval_ms`, each export under `export_timeout_ms`.
//! [`TraceGuard`]'s drop (at exit) exports what is queued.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter as _, SpanProcessor};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::config::tracing::{OtlpProtocol, TracingSettings};

/// The target of every span that becomes an OpenTelemetry span.
pub const TRACE_TARGET: &str = "drbgd::trace";

/// Spans per export call at most (the OpenTelemetry SDK's default batch size).
pub const MAX_BATCH: usize = 512;

/// Set once traces are on.
static ACTIVE: OnceLock<Active> = OnceLock::new();

struct Active {
    propagator: TraceContextPropagator,
    traceresponse: bool,
}

/// Set when an `OTEL_*` variable named an `https://` collector, which this build cannot reach.
static NO_TLS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether traces were asked for by an `OTEL_*` variable naming an `https://` collector and
/// left off (no TLS client is built in).
pub fn refused_tls() -> bool {
    NO_TLS.load(Ordering::Relaxed)
}

/// Spans exported, dropped at the full queue, and lost to failed exports.
static EXPORTED: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static FAILED: AtomicU64 = AtomicU64::new(0);

/// Counts of finished spans so far: `(exported, dropped, failed)`.
pub fn span_counts() -> (u64, u64, u64) {
    (EXPORTED.load(Ordering::Relaxed), DROPPED.load(Ordering::Relaxed), FAILED.load(Ordering::Relaxed))
}

/// Keeps the exporter running; dropping it exports the queued spans and stops it.
#[must_use = "dropping the guard stops the exporter"]
pub struct TraceGuard {
    provider: SdkTracerProvider,
    /// Where the spans go, for the start-up line.
    pub description: String,
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "trace exporter did not shut down cleanly");
        }
    }
}

/// The tracing layer that turns drbgd's spans into OpenTelemetry spans, and its guard; `None`
/// when traces are off. Reads the standard `OTEL_*` variables of the process.
///
/// # Errors
/// A protocol name that is not `grpc` or `http/protobuf`, an exporter that cannot be built
/// (a malformed endpoint), or a thread that cannot be started.
pub fn layer<S>(settings: &TracingSettings) -> std::io::Result<Option<(impl Layer<S> + use<S>, TraceGuard)>>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let env = |key: &str| std::env::var(key).ok();
    let Some(endpoint) = settings.endpoint(env) else { return Ok(None) };
    if endpoint.trim_start().get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://")) {
        // Only an OTEL_* variable can get here ([tracing] refuses https://): ambient, so it
        // turns traces off rather than stopping the service. Logged once the log is up.
        NO_TLS.store(true, Ordering::Relaxed);
        return Ok(None);
    }
    let protocol = settings.protocol(env).map_err(std::io::Error::other)?;
    let given = (!settings.otlp_endpoint.trim().is_empty()).then(|| settings.otlp_endpoint.trim().to_owned());
    let queue = Queue::start(given, protocol, settings)?;
    let root = Sampler::TraceIdRatioBased(settings.sample_ratio);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(queue)
        .with_sampler(Sampler::ParentBased(Box::new(root)))
        .with_resource(resource())
        .build();
    let tracer = provider.tracer("drbgd");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(Targets::new().with_target(TRACE_TARGET, tracing::Level::TRACE));
    let _ = ACTIVE
        .set(Active { propagator: TraceContextPropagator::new(), traceresponse: settings.traceresponse });
    let description = format!(
        "endpoint={} protocol={protocol:?} sample_ratio={}",
        without_userinfo(&endpoint),
        settings.sample_ratio
    );
    Ok(Some((layer, TraceGuard { provider, description })))
}

/// `service.name` drbgd (unless `OTEL_SERVICE_NAME` says otherwise), `service.version`, and
/// `OTEL_RESOURCE_ATTRIBUTES`.
fn resource() -> Resource {
    let builder = Resource::builder()
        .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if std::env::var_os("OTEL_SERVICE_NAME").is_some() { builder } else { builder.with_service_name("drbgd") }
        .build()
}

/// The server span of a request, continuing the trace its `traceparent`/`tracestate` headers
/// name (a new trace without them); a disabled span when traces are off. `name` (asked only
/// when traces are on) must be bounded: a route template or a known method, never the
/// request's own path.
pub fn server_span<'a>(
    headers: &HeaderMap,
    name: impl FnOnce() -> std::borrow::Cow<'a, str>,
    method: &str,
    grpc: bool,
) -> Span {
    let Some(active) = ACTIVE.get() else { return Span::none() };
    let name = name();
    let name = name.as_ref();
    let span = tracing::info_span!(
        target: TRACE_TARGET,
        "request",
        otel.name = name,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = (!grpc).then_some(method),
        http.route = (!grpc).then_some(name),
        http.response.status_code = tracing::field::Empty,
        rpc.system = grpc.then_some("grpc"),
        rpc.grpc.status_code = tracing::field::Empty,
        drbgd.caller = tracing::field::Empty,
        drbgd.alg = tracing::field::Empty,
        drbgd.n = tracing::field::Empty,
        drbgd.outcome = tracing::field::Empty,
    );
    let parent = active.propagator.extract(&opentelemetry_http::HeaderExtractor(headers));
    let _ = span.set_parent(parent);
    span
}

/// What came of a request, on its server span: caller, algorithm and bits served, status
/// and error code. A server error (HTTP 5xx, or a gRPC status a server error maps to) marks
/// the span as failed.
pub fn record_end(span: &Span, caller: &str, alg: &str, n: u64, status: u16, code: &str, grpc: bool) {
    if span.is_none() {
        return;
    }
    if !caller.is_empty() {
        span.record("drbgd.caller", caller);
    }
    span.record("drbgd.alg", alg);
    span.record("drbgd.n", n);
    span.record("drbgd.outcome", if code.is_empty() { "ok" } else { code });
    let server_error = if grpc {
        span.record("rpc.grpc.status_code", status);
        // UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS.
        matches!(status, 2 | 4 | 12 | 13 | 14 | 15)
    } else {
        span.record("http.response.status_code", status);
        status >= 500
    };
    if server_error {
        span.record("otel.status_code", "error");
    }
}

/// A response that failed after its headers (a stream cut by a generator that refused): its
/// error code on its server span, which is marked failed.
pub fn record_failure(span: &Span, code: &str) {
    if !span.is_none() {
        span.record("drbgd.outcome", code);
        span.record("otel.status_code", "error");
    }
}

/// The trace id of `span`, 32 hex digits, or `None` when traces are off.
pub fn trace_id(span: &Span) -> Option<String> {
    if span.is_none() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then(|| span_context.trace_id().to_string())
}

/// A `traceresponse` header naming `span` (version 00, its trace and span id, the sampled
/// flag), where `[tracing] traceresponse` asks for one.
pub fn traceresponse(span: &Span) -> Option<HeaderValue> {
    if !ACTIVE.get()?.traceresponse || span.is_none() {
        return None;
    }
    let context = span.context();
    let sc = context.span().span_context().clone();
    if !sc.is_valid() {
        return None;
    }
    let value = format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8());
    HeaderValue::from_str(&value).ok()
}

/// A message to the export thread.
enum Msg {
    Span(Box<SpanData>),
    Resource(Resource),
    Flush(SyncSender<()>),
    Stop(SyncSender<()>),
}

/// The span processor: a bounded queue in front of the export thread.
#[derive(Debug)]
struct Queue {
    tx: SyncSender<Msg>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    timeout: Duration,
}

impl Queue {
    /// Starts the export thread, which builds the exporter in its own runtime (tonic and
    /// hyper need one) and reports whether it could.
    fn start(
        endpoint: Option<String>,
        protocol: OtlpProtocol,
        settings: &TracingSettings,
    ) -> std::io::Result<Queue> {
        let (tx, rx) = mpsc::sync_channel(settings.queue_spans);
        let (built_tx, built_rx) = mpsc::sync_channel(1);
        let interval = Duration::from_millis(settings.export_interval_ms);
        let timeout = Duration::from_millis(settings.export_timeout_ms);
        let worker = std::thread::Builder::new().name("drbgd-traces".into()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(e) => return drop(built_tx.send(Err(e.to_string()))),
            };
            let exporter = {
                let _entered = runtime.enter();
                exporter(endpoint, protocol, timeout)
            };
            match exporter {
                Ok(exporter) => {
                    let _ = built_tx.send(Ok(()));
                    Export { runtime, exporter, timeout, batch: Vec::new() }.run(&rx, interval);
                }
                Err(e) => drop(built_tx.send(Err(e))),
            }
        })?;
        match built_rx.recv() {
            Ok(Ok(())) => Ok(Queue { tx, worker: Mutex::new(Some(worker)), timeout }),
            Ok(Err(e)) => Err(std::io::Error::other(format!("cannot build the OTLP exporter: {e}"))),
            Err(_) => Err(std::io::Error::other("the trace export thread ended before it started")),
        }
    }

    /// Sends a control message and waits for its answer, both within `wait` in all (a full
    /// queue behind a stalled export is waited for only that long).
    fn ask(&self, make: impl FnOnce(SyncSender<()>) -> Msg, wait: Duration) -> OTelSdkResult {
        let deadline = Instant::now() + wait;
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        let mut message = make(reply_tx);
        loop {
            match self.tx.try_send(message) {
                Ok(()) => break,
                Err(mpsc::TrySendError::Disconnected(_)) => return Err(OTelSdkError::AlreadyShutdown),
                Err(mpsc::TrySendError::Full(back)) if Instant::now() < deadline => {
                    message = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(mpsc::TrySendError::Full(_)) => return Err(OTelSdkError::Timeout(wait)),
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        reply_rx.recv_timeout(left).map_err(|_| OTelSdkError::Timeout(wait))
    }
}

/// The OTLP exporter for `protocol`; `endpoint` (from `[tracing]`) overrides the variables.
fn exporter(
    endpoint: Option<String>,
    protocol: OtlpProtocol,
    timeout: Duration,
) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let builder = opentelemetry_otlp::SpanExporter::builder();
    let built = match protocol {
        OtlpProtocol::Grpc => {
            let b = builder.with_tonic().with_timeout(timeout);
            match endpoint {
                Some(e) => b.with_endpoint(e).build(),
                None => b.build(),
            }
        }
        OtlpProtocol::HttpProtobuf => {
            let b = builder
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_timeout(timeout);
            match endpoint {
                Some(e) => b.with_endpoint(http_traces_url(&e)).build(),
                None => b.build(),
            }
        }
    };
    built.map_err(|e| e.to_string())
}

/// `endpoint` with any user name and password taken out, for the log.
fn without_userinfo(endpoint: &str) -> String {
    match endpoint.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => endpoint.to_owned(),
    }
}

/// An OTLP/HTTP collector's base URL with the traces path added where it has no path.
fn http_traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    let after_scheme = trimmed.split_once("://").map_or(trimmed, |(_, rest)| rest);
    if after_scheme.contains('/') { endpoint.to_owned() } else { format!("{trimmed}/v1/traces") }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if self.tx.try_send(Msg::Span(Box::new(span))).is_err() {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Msg::Flush, self.timeout + Duration::from_secs(1))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let result = self.ask(Msg::Stop, timeout);
        let worker = self.worker.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if result.is_ok()
            && let Some(worker) = worker
        {
            let _ = worker.join();
        }
        result
    }

    fn set_resource(&mut self, resource: &Resource) {
        let _ = self.tx.send(Msg::Resource(resource.clone()));
    }
}

/// The export thread's state.
struct Export {
    runtime: tokio::runtime::Runtime,
    exporter: opentelemetry_otlp::SpanExporter,
    timeout: Duration,
    batch: Vec<SpanData>,
}

impl Export {
    fn run(mut self, rx: &Receiver<Msg>, interval: Duration) {
        let mut next = Instant::now() + interval;
        loop {
            match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(Msg::Span(span)) => {
                    self.batch.push(*span);
                    if self.batch.len() >= MAX_BATCH {
                        self.export();
                    }
                }
                Ok(Msg::Resource(resource)) => self.exporter.set_resource(&resource),
                Ok(Msg::Flush(reply)) => {
                    self.export();
                    let _ = reply.send(());
                }
                Ok(Msg::Stop(reply)) => {
                    self.export();
                    let _ = self.exporter.shutdown();
                    // Not waiting for the runtime's blocking tasks (a DNS lookup of a collector
                    // that does not answer): the process is about to exit.
                    let Export { runtime, exporter, .. } = self;
                    drop(exporter);
                    runtime.shutdown_background();
                    let _ = reply.send(());
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.export();
                    next = Instant::now() + interval;
                }
                Err(RecvTimeoutError::Disconnected) => return self.export(),
            }
        }
    }

    /// Exports the batch (if any) under the deadline, counting the outcome.
    fn export(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        let n = batch.len() as u64;
        let exporter = &self.exporter;
        let timeout = self.timeout;
        let result =
            self.runtime.block_on(async { tokio::time::timeout(timeout, exporter.export(batch)).await });
        match result {
            Ok(Ok(())) => {
                EXPORTED.fetch_add(n, Ordering::Relaxed);
            }
            Ok(Err(e)) => failed(n, &e.to_string()),
            Err(_) => failed(n, "timed out"),
        }
    }
}

/// Counts spans a failed export lost; warns on the first failure and then once a minute.
fn failed(n: u64, why: &str) {
    static LAST_WARNING: Mutex<Option<Instant>> = Mutex::new(None);
    FAILED.fetch_add(n, Ordering::Relaxed);
    let mut last = LAST_WARNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
        *last = Some(Instant::now());
        tracing::warn!(
            spans = n,
            error = why,
            "trace export failed; spans lost (drbgd_trace_spans_total{{outcome=\"failed\"}})"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_never_shows_a_collector_credential() {
        assert_eq!(without_userinfo("http://user:token@c:4317/x"), "http://c:4317/x");
        assert_eq!(without_userinfo("http://c:4317"), "http://c:4317");
        assert_eq!(without_userinfo("http://a@b@c:1/p@q"), "http://c:1/p@q");
    }

    #[test]
    fn the_traces_path_is_added_only_to_a_bare_collector_url() {
        assert_eq!(http_traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(http_traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(http_traces_url("https://c/otlp/v1/traces"), "https://c/otlp/v1/traces");
    }

    fn span(sampled: bool) -> SpanData {
        use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
        let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(7),
                SpanId::from(9),
                flags,
                false,
                TraceState::default(),
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Server,
            name: "request".into(),
            start_time: std::time::SystemTime::now(),
            end_time: std::time::SystemTime::now(),
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: Status::Unset,
            instrumentation_scope: Default::default(),
        }
    }

    /// A full queue drops (and counts) rather than blocks; spans the sampler dropped never
    /// reach it; what a dead collector refused is counted as failed, and shutdown returns.
    #[test]
    fn a_full_queue_drops_and_counts_and_never_blocks() {
        let settings = TracingSettings {
            otlp_endpoint: String::new(),
            otlp_protocol: String::new(),
            sample_ratio: 1.0,
            queue_spans: 4,
            export_interval_ms: 60_000,
            export_timeout_ms: 200,
            traceresponse: false,
        };
        // Port 9 (discard) on loopback: nothing listens, every export fails fast.
        let queue =
            Queue::start(Some("http://127.0.0.1:9".into()), OtlpProtocol::HttpProtobuf, &settings).unwrap();
        let (_, dropped_before, failed_before) = span_counts();
        let started = Instant::now();
        for _ in 0..1000 {
            queue.on_end(span(false));
        }
        for _ in 0..1000 {
            queue.on_end(span(true));
        }
        assert!(started.elapsed() < Duration::from_secs(1), "on_end never waits");
        let (_, dropped, _) = span_counts();
        // The worker drains while we fill; at most a few hundred can have got through.
        assert!(dropped - dropped_before >= 500, "{}", dropped - dropped_before);
        queue.force_flush().unwrap();
        let (_, dropped_after, failed) = span_counts();
        assert!(failed > failed_before, "the refused export is counted");
        assert_eq!(
            dropped_after - dropped_before + failed - failed_before,
            1000,
            "every sampled span accounted for"
        );
        queue.shutdown_with_timeout(Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn off_means_no_span() {
        // This test binary installs no trace layer.
        let span = server_span(&HeaderMap::new(), || "/token".into(), "GET", false);
        assert!(span.is_none());
        assert_eq!(trace_id(&span), None);
        assert!(traceresponse(&span).is_none());
    }
}
