//! The Prometheus series, as one typed struct owning its registry. Namespace `drbgd_`; every
//! series has help text and a unit suffix; label values come from fixed sets only (route
//! templates, algorithm names, status codes, machine codes).

use std::sync::{Arc, OnceLock};

use axum::http::StatusCode;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::drbg::stats::Stats;
use crate::drbg::{Algorithm, ReseedReason, bits};

/// Request latency buckets, seconds: 25 µs (a 256-bit token is served in tens of µs) to 10 s
/// (a 10^8-bit stream), roughly 1-2.5-5 per decade.
const LATENCY_BUCKETS: &[f64] = &[
    25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
    1.0, 2.5, 5.0, 10.0,
];
/// Generator-only time, seconds: 100 ns (a 16-byte fill) to 1 s.
const GENERATE_BUCKETS: &[f64] =
    &[1e-7, 2.5e-7, 5e-7, 1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0];
/// Ones ratio: dense around 0.5, where every healthy response of more than a few hundred bits
/// lands, with coarse buckets out to 0 and 1 for tiny n.
const RATIO_BUCKETS: &[f64] =
    &[0.3, 0.4, 0.45, 0.47, 0.48, 0.49, 0.495, 0.499, 0.5, 0.501, 0.505, 0.51, 0.52, 0.53, 0.55, 0.6, 0.7];
/// z = (ones - n/2) / sqrt(n/4): standard normal under a healthy generator for every n, so
/// half-unit buckets over -6..6 resolve the bell and one alert (|z| > 5) fits all sizes.
const Z_BUCKETS: &[f64] = &[
    -6.0, -5.0, -4.0, -3.5, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0,
    5.0, 6.0,
];

/// Most distinct route labels of HTTP requests (the API's endpoints; `unmatched` besides):
/// a handle per (route, algorithm) is kept for 200s.
pub const MAX_ROUTE_LABELS: usize = 64;

/// Every series drbgd exports.
pub struct Metrics {
    registry: Registry,
    /// `drbgd_http_request_duration_seconds{route,alg,status}`.
    pub http_duration: HistogramVec,
    /// `drbgd_grpc_request_duration_seconds{method,alg,code}`.
    pub grpc_duration: HistogramVec,
    /// `drbgd_generate_duration_seconds{alg}`.
    pub generate_duration: HistogramVec,
    /// `drbgd_requests_in_flight`.
    pub in_flight: IntGauge,
    /// `drbgd_errors_total{code}`.
    pub errors: IntCounterVec,
    /// `drbgd_output_ones_ratio{alg}`.
    pub ones_ratio: HistogramVec,
    /// `drbgd_output_bias_zscore{alg}`.
    pub bias_zscore: HistogramVec,
    /// `drbgd_bias_observations_total{alg}`: bits examined.
    pub bias_observations: IntCounterVec,
    /// `drbgd_bias_ones_total{alg}`: ones among them.
    pub bias_ones: IntCounterVec,
    /// `drbgd_output_bytes_total{alg}`.
    pub output_bytes: IntCounterVec,
    /// `drbgd_shards`.
    pub shards: IntGauge,
    /// `drbgd_ready`: 1 while /readyz answers 200.
    pub ready: IntGauge,
    /// `drbgd_approved_only`: 1 while only SP 800-90A mechanisms are served.
    pub approved_only: IntGauge,
    /// `drbgd_startup_self_test_failures_total{alg}`: start-up self-tests failed, counted once
    /// at start (continuous failures are `drbgd_self_test_failures_total`, from the pool).
    pub startup_self_test_failures: IntCounterVec,
    /// `drbgd_reloads_total{what,result}`: reloads of mounted files (TLS, API keys).
    pub reloads: IntCounterVec,
    /// `drbgd_caller_requests_total{caller}`: API requests by caller (admitted or denied).
    pub caller_requests: IntCounterVec,
    /// `drbgd_caller_output_bytes_total{caller}`: random bytes served by caller.
    pub caller_output_bytes: IntCounterVec,
    /// `drbgd_caller_denials_total{caller,code}`: requests refused by auth, policy or quota.
    pub caller_denials: IntCounterVec,
    /// The shared quota store's series (`[quota] store = "redis"`).
    pub quota_store: QuotaStoreSeries,
    /// The tickets' and kept results' series (registered with `[tickets] enabled`).
    pub tickets: TicketSeries,
    /// A followed drand network's series (registered with `[beacon] source = "drand"`).
    pub beacon: crate::beacon::follow::BeaconSeries,
    /// Each algorithm's series, resolved on first use (see [`AlgSeries`]).
    per_alg: [OnceLock<AlgSeries>; Algorithm::ALL.len()],
    /// `http_duration` of status 200 per (route, algorithm or none), resolved on first use.
    http_ok: Vec<OnceLock<Histogram>>,
}

/// The shared quota store's series.
#[derive(Debug, Clone)]
pub struct QuotaStoreSeries {
    /// `drbgd_quota_store_up`: 1 while quotas are kept in the shared store, 0 while this
    /// replica falls back (`quota.on_store_failure`); absent with the local store.
    pub up: IntGauge,
    /// `drbgd_quota_store_replicas`: replicas last seen alive in the store.
    pub replicas: IntGauge,
    /// `drbgd_quota_store_calls_total{op}`: lease exchanges and heartbeats sent.
    pub calls: IntCounterVec,
    /// `drbgd_quota_store_errors_total{op,reason}`.
    pub errors: IntCounterVec,
    /// `drbgd_quota_store_fallback_seconds_total`: time spent falling back.
    pub fallback_seconds: prometheus::Counter,
}

/// The tickets' store's operations (`op` of `drbgd_results_store_duration_seconds` and
/// `drbgd_results_store_errors_total`, as `tickets.rs` names them), each exported from the start.
pub const RESULTS_STORE_OPS: [&str; 10] =
    ["create", "find", "settle", "settled", "reveal", "list", "result", "keep", "sweep", "size"];

/// The tickets' and their store's series.
#[derive(Debug, Clone)]
pub struct TicketSeries {
    /// `drbgd_tickets_total{event}`: created, used, replayed (a retry answered its stored answer).
    pub events: IntCounterVec,
    /// `drbgd_ticket_refusals_total{code}`: draws, creations and reveals refused, by code.
    pub refusals: IntCounterVec,
    /// `drbgd_results_kept_total`: receipts kept without a ticket (`[results] keep_all`).
    pub kept: IntCounter,
    /// `drbgd_results_store_duration_seconds{op}`: each store call, errors included.
    pub duration: HistogramVec,
    /// `drbgd_results_store_errors_total{op}`: store calls that failed or timed out.
    pub errors: IntCounterVec,
    /// `drbgd_results_swept_total`: kept results deleted past their retention.
    pub swept: IntCounter,
    /// `drbgd_results_store_bytes`: what the store holds, as last measured.
    pub bytes: IntGauge,
    /// `drbgd_results_store_full`: 1 while the store holds `results.max_bytes` or more.
    pub full: IntGauge,
}

impl TicketSeries {
    fn new() -> Self {
        let single = |name: &str, help: &str| {
            IntCounter::with_opts(Opts::new(name, help).namespace("drbgd")).expect("valid counter")
        };
        TicketSeries {
            events: counter(
                "tickets_total",
                "Tickets by event: created, used (a draw kept under it), replayed (a retry answered the stored answer).",
                &["event"],
            ),
            refusals: counter(
                "ticket_refusals_total",
                "Ticket calls refused, by code (ticket_used, ticket_not_yours, ticket_expired, too_many_tickets, store_unavailable, store_full, ...).",
                &["code"],
            ),
            kept: single("results_kept_total", "Receipts kept without a ticket (results.keep_all)."),
            duration: histogram(
                "results_store_duration_seconds",
                "Calls to the tickets' store by operation, failures included.",
                &["op"],
                &[0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5],
            ),
            errors: counter(
                "results_store_errors_total",
                "Calls to the tickets' store that failed or passed results.timeout_ms, by operation.",
                &["op"],
            ),
            swept: single("results_swept_total", "Kept results deleted past results.retention_days."),
            bytes: gauge("results_store_bytes", "Bytes the tickets' store holds, as last measured."),
            full: gauge("results_store_full", "1 while the tickets' store holds results.max_bytes or more."),
        }
    }
}

/// The series of one algorithm, kept once resolved: the request path does not hash label
/// values (a series, once it exists, is never removed).
#[derive(Debug)]
pub struct AlgSeries {
    /// `drbgd_generate_duration_seconds{alg}`.
    pub generate: Histogram,
    /// `drbgd_output_bytes_total{alg}`.
    pub output_bytes: IntCounter,
    ones_ratio: Histogram,
    bias_zscore: Histogram,
    bias_observations: IntCounter,
    bias_ones: IntCounter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

fn histogram(name: &str, help: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
    HistogramVec::new(HistogramOpts::new(name, help).namespace("drbgd").buckets(buckets.to_vec()), labels)
        .expect("valid histogram")
}

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help).namespace("drbgd"), labels).expect("valid counter")
}

fn gauge(name: &str, help: &str) -> IntGauge {
    IntGauge::with_opts(Opts::new(name, help).namespace("drbgd")).expect("valid gauge")
}

impl QuotaStoreSeries {
    /// The series, not registered ([`Metrics::register_quota_store`] does, with a shared store).
    fn new() -> Self {
        QuotaStoreSeries {
            up: gauge(
                "quota_store_up",
                "1 while callers' quotas are kept in the shared store, 0 while this replica falls back (quota.on_store_failure).",
            ),
            replicas: gauge("quota_store_replicas", "Replicas last seen alive in the shared quota store."),
            calls: counter(
                "quota_store_calls_total",
                "Calls to the shared quota store by operation: exchange (lease refill, settle, return), heartbeat.",
                &["op"],
            ),
            errors: counter(
                "quota_store_errors_total",
                "Failed calls to the shared quota store by operation and reason (timeout, unavailable, reply).",
                &["op", "reason"],
            ),
            fallback_seconds: prometheus::Counter::with_opts(
                Opts::new(
                    "quota_store_fallback_seconds_total",
                    "Time this replica spent falling back from the shared quota store.",
                )
                .namespace("drbgd"),
            )
            .expect("valid counter"),
        }
    }
}

/// The per-caller series: requests, random bytes served, denials.
fn caller_series() -> (IntCounterVec, IntCounterVec, IntCounterVec) {
    let requests = counter(
        "caller_requests_total",
        "API requests by caller (admitted or denied); callers are the configured ones, `anonymous` with auth off, `unknown` for requests whose credentials (missing, or a key or certificate that names no caller) were refused.",
        &["caller"],
    );
    let output_bytes = counter("caller_output_bytes_total", "Random bytes served, by caller.", &["caller"]);
    let denials = counter(
        "caller_denials_total",
        "Requests refused by caller and code: unauthorized, unknown_client, credentials_conflict (these three under caller unknown), route_not_allowed, alg_not_allowed, n_not_allowed, pr_not_allowed, rate_limited, concurrency_limited, quota_store_unavailable.",
        &["caller", "code"],
    );
    (requests, output_bytes, denials)
}

impl Metrics {
    /// Creates and registers every series; lifecycle counters are read from `stats` at
    /// each scrape.
    ///
    /// # Panics
    /// Never: names and labels are constants (a unit test registers them).
    pub fn new(stats: Arc<Stats>) -> Self {
        let m = Metrics::series();
        for what in ["tls", "callers", "receipts"] {
            for result in ["ok", "error"] {
                m.reloads.with_label_values(&[what, result]);
            }
        }
        m.register_series(stats);
        m
    }

    /// Every series, none registered yet.
    fn series() -> Self {
        let (caller_requests, caller_output_bytes, caller_denials) = caller_series();
        Metrics {
            registry: Registry::new(),
            http_duration: histogram(
                "http_request_duration_seconds",
                "HTTP request latency until the response headers, by route template, algorithm and status.",
                &["route", "alg", "status"],
                LATENCY_BUCKETS,
            ),
            grpc_duration: histogram(
                "grpc_request_duration_seconds",
                "gRPC call latency (unary: whole call; streaming: until the stream ends), by method, algorithm and code.",
                &["method", "alg", "code"],
                LATENCY_BUCKETS,
            ),
            generate_duration: histogram(
                "generate_duration_seconds",
                "Time spent in the generator alone per fill call.",
                &["alg"],
                GENERATE_BUCKETS,
            ),
            in_flight: gauge("requests_in_flight", "API requests in progress (HTTP and gRPC)."),
            errors: counter("errors_total", "Error responses by machine code.", &["code"]),
            ones_ratio: histogram(
                "output_ones_ratio",
                "Per response: ones / n over exactly the n bits served.",
                &["alg"],
                RATIO_BUCKETS,
            ),
            bias_zscore: histogram(
                "output_bias_zscore",
                "Per response: (ones - n/2) / sqrt(n/4); standard normal for a healthy generator.",
                &["alg"],
                Z_BUCKETS,
            ),
            bias_observations: counter("bias_observations_total", "Output bits examined for bias.", &["alg"]),
            bias_ones: counter("bias_ones_total", "One bits among the examined output bits.", &["alg"]),
            output_bytes: counter("output_bytes_total", "Random bytes served.", &["alg"]),
            shards: gauge("shards", "Generator shards (each holds one instance per algorithm)."),
            ready: gauge("ready", "1 while the service reports ready."),
            approved_only: gauge(
                "approved_only",
                "1 while only SP 800-90A mechanisms (CTR_DRBG, Hash_DRBG, HMAC_DRBG) are served (drbg.approved_only).",
            ),
            startup_self_test_failures: counter(
                "startup_self_test_failures_total",
                "Start-up self-tests failed, by algorithm (counted at start; that algorithm is not served and /readyz answers 503 until a restart passes them).",
                &["alg"],
            ),
            reloads: counter(
                "reloads_total",
                "Reloads after a change of a mounted file or a SIGHUP, by what (tls, callers) and result (ok, error).",
                &["what", "result"],
            ),
            caller_requests,
            caller_output_bytes,
            caller_denials,
            quota_store: QuotaStoreSeries::new(),
            tickets: TicketSeries::new(),
            beacon: crate::beacon::follow::BeaconSeries::new(),
            per_alg: Default::default(),
            http_ok: (0..(MAX_ROUTE_LABELS + 1) * (Algorithm::ALL.len() + 1))
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// Registers every series but the quota store's ([`Metrics::register_quota_store`]), the
    /// lifecycle counters read from `stats` at each scrape, the build info and (on Linux) the
    /// process's own.
    fn register_series(&self, stats: Arc<Stats>) {
        let r = &self.registry;
        let collectors: Vec<Box<dyn Collector>> = vec![
            Box::new(self.http_duration.clone()),
            Box::new(self.grpc_duration.clone()),
            Box::new(self.generate_duration.clone()),
            Box::new(self.in_flight.clone()),
            Box::new(self.errors.clone()),
            Box::new(self.ones_ratio.clone()),
            Box::new(self.bias_zscore.clone()),
            Box::new(self.bias_observations.clone()),
            Box::new(self.bias_ones.clone()),
            Box::new(self.output_bytes.clone()),
            Box::new(self.shards.clone()),
            Box::new(self.ready.clone()),
            Box::new(self.approved_only.clone()),
            Box::new(self.startup_self_test_failures.clone()),
            Box::new(LifecycleCollector::new(stats)),
            Box::new(self.reloads.clone()),
            Box::new(self.caller_requests.clone()),
            Box::new(self.caller_output_bytes.clone()),
            Box::new(self.caller_denials.clone()),
            Box::new(build_info()),
        ];
        for c in collectors {
            r.register(c).expect("unique metric names");
        }
        // process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds, ...:
        // the standard names (no drbgd_ prefix), so shared dashboards and soak checks work.
        #[cfg(target_os = "linux")]
        r.register(Box::new(prometheus::process_collector::ProcessCollector::for_self()))
            .expect("unique metric names");
    }

    /// Registers the tickets' series: only with `[tickets] enabled`.
    pub fn register_tickets(&self) {
        let t = &self.tickets;
        let collectors: [Box<dyn Collector>; 8] = [
            Box::new(t.events.clone()),
            Box::new(t.refusals.clone()),
            Box::new(t.kept.clone()),
            Box::new(t.duration.clone()),
            Box::new(t.errors.clone()),
            Box::new(t.swept.clone()),
            Box::new(t.bytes.clone()),
            Box::new(t.full.clone()),
        ];
        for c in collectors {
            let _ = self.registry.register(c);
        }
        for event in ["created", "used", "replayed"] {
            t.events.with_label_values(&[event]);
        }
        // Every store operation's series from the start, at 0: a rate of errors over calls is
        // defined before the first failure (DrbgdResultsStoreDown).
        for op in RESULTS_STORE_OPS {
            t.errors.with_label_values(&[op]);
            t.duration.with_label_values(&[op]);
        }
    }

    /// Registers a followed drand network's series: only with `[beacon] source = "drand"`.
    pub fn register_beacon(&self) {
        let b = &self.beacon;
        let collectors: [Box<dyn Collector>; 3] =
            [Box::new(b.rounds.clone()), Box::new(b.latest.clone()), Box::new(b.lag.clone())];
        for c in collectors {
            let _ = self.registry.register(c);
        }
    }

    /// Registers the quota store's series: only with a shared store, so a replica alone
    /// exports none of them.
    pub fn register_quota_store(&self) {
        let q = &self.quota_store;
        let collectors: [Box<dyn Collector>; 5] = [
            Box::new(q.up.clone()),
            Box::new(q.replicas.clone()),
            Box::new(q.calls.clone()),
            Box::new(q.errors.clone()),
            Box::new(q.fallback_seconds.clone()),
        ];
        for c in collectors {
            // A second registration (a second server in one test process) is harmless.
            let _ = self.registry.register(c);
        }
        for op in ["exchange", "heartbeat"] {
            q.calls.with_label_values(&[op]);
            for reason in ["timeout", "unavailable", "reply"] {
                q.errors.with_label_values(&[op, reason]);
            }
        }
    }

    /// The series of `alg`.
    pub fn alg(&self, alg: Algorithm) -> &AlgSeries {
        self.per_alg[alg.index()].get_or_init(|| {
            let label = [alg.name()];
            AlgSeries {
                generate: self.generate_duration.with_label_values(&label),
                output_bytes: self.output_bytes.with_label_values(&label),
                ones_ratio: self.ones_ratio.with_label_values(&label),
                bias_zscore: self.bias_zscore.with_label_values(&label),
                bias_observations: self.bias_observations.with_label_values(&label),
                bias_ones: self.bias_ones.with_label_values(&label),
            }
        })
    }

    /// Records one response's bias: exactly `n_bits` bits with `ones` ones.
    pub fn observe_bias(&self, alg: Algorithm, n_bits: u64, ones: u64) {
        if n_bits == 0 {
            return;
        }
        let n = n_bits as f64;
        let z = (ones as f64 - n / 2.0) / (n / 4.0).sqrt();
        let series = self.alg(alg);
        series.ones_ratio.observe(ones as f64 / n);
        series.bias_zscore.observe(z);
        series.bias_observations.inc_by(n_bits);
        series.bias_ones.inc_by(ones);
        series.output_bytes.inc_by(bits::byte_len(n_bits));
    }

    /// Records one HTTP request's latency under `label`, the label of the endpoint at `route`
    /// in the API's table (at or past [`MAX_ROUTE_LABELS`]: `unmatched`). 200s (nearly every
    /// request) use a handle resolved once per (route, algorithm); other statuses look theirs
    /// up.
    pub fn observe_http(
        &self,
        (route, label): (usize, &'static str),
        alg: Option<Algorithm>,
        status: StatusCode,
        seconds: f64,
    ) {
        let (route, label) =
            if route < MAX_ROUTE_LABELS { (route, label) } else { (MAX_ROUTE_LABELS, "unmatched") };
        let alg_label = alg.map_or("none", Algorithm::name);
        if status != StatusCode::OK {
            self.http_duration.with_label_values(&[label, alg_label, status.as_str()]).observe(seconds);
            return;
        }
        let slot = route * (Algorithm::ALL.len() + 1) + alg.map_or(Algorithm::ALL.len(), Algorithm::index);
        self.http_ok[slot]
            .get_or_init(|| self.http_duration.with_label_values(&[label, alg_label, "200"]))
            .observe(seconds);
    }

    /// The text exposition of every series.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        let families = self.registry.gather();
        TextEncoder::new().encode(&families, &mut out).expect("text encoding never fails");
        String::from_utf8(out).expect("exposition is UTF-8")
    }
}

fn build_info() -> IntGaugeVec {
    let g = IntGaugeVec::new(
        Opts::new("build_info", "Build and runtime facts; the value is always 1.").namespace("drbgd"),
        &["version", "fork_detection"],
    )
    .expect("valid gauge");
    g.with_label_values(&[env!("CARGO_PKG_VERSION"), crate::drbg::fork::mechanism()]).set(1);
    g
}

/// Exports the pool's lifecycle counters, copying them from [`Stats`] at scrape time.
struct LifecycleCollector {
    stats: Arc<Stats>,
    reseeds: IntCounterVec,
    reseed_failures: IntCounterVec,
    self_test_failures: IntCounterVec,
    entropy_failures: IntCounter,
    /// `drbgd_log_lines_dropped_total`, from the log writer.
    log_lines_dropped: IntCounter,
    /// `drbgd_trace_spans_total{outcome}`, from the trace exporter.
    trace_spans: IntCounterVec,
    /// Held while the counters catch up, so that two scrapes at once do not both add the
    /// same difference.
    syncing: std::sync::Mutex<()>,
}

impl LifecycleCollector {
    fn new(stats: Arc<Stats>) -> Self {
        let c = LifecycleCollector {
            stats,
            reseeds: counter(
                "reseeds_total",
                "Successful generator (re)seeds by reason.",
                &["alg", "reason"],
            ),
            reseed_failures: counter(
                "reseed_failures_total",
                "Reseeds that failed (the generator refused to serve).",
                &["alg"],
            ),
            self_test_failures: counter(
                "self_test_failures_total",
                "Continuous health-test failures (the generator was disabled and re-instantiated).",
                &["alg"],
            ),
            entropy_failures: IntCounter::with_opts(
                Opts::new("entropy_failures_total", "Failed reads of the OS entropy source.")
                    .namespace("drbgd"),
            )
            .expect("valid counter"),
            log_lines_dropped: IntCounter::with_opts(
                Opts::new(
                    "log_lines_dropped_total",
                    "Access and diagnostic log lines dropped because the log sink did not keep up (audit lines are never dropped).",
                )
                .namespace("drbgd"),
            )
            .expect("valid counter"),
            trace_spans: counter(
                "trace_spans_total",
                "Finished OpenTelemetry spans by outcome: exported, dropped (the export queue was full) or failed (the collector refused or did not answer in time). Zero with traces off.",
                &["outcome"],
            ),
            syncing: std::sync::Mutex::new(()),
        };
        for outcome in ["exported", "dropped", "failed"] {
            c.trace_spans.with_label_values(&[outcome]);
        }
        for alg in Algorithm::ALL {
            for reason in ReseedReason::ALL {
                c.reseeds.with_label_values(&[alg.name(), reason.name()]);
            }
            c.reseed_failures.with_label_values(&[alg.name()]);
            c.self_test_failures.with_label_values(&[alg.name()]);
        }
        c
    }

    fn sync(&self) {
        let _one_at_a_time = self.syncing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let catch_up = |counter: &IntCounter, total: u64| {
            let current = counter.get();
            if total > current {
                counter.inc_by(total - current);
            }
        };
        for alg in Algorithm::ALL {
            for reason in ReseedReason::ALL {
                let c = self.reseeds.with_label_values(&[alg.name(), reason.name()]);
                catch_up(&c, self.stats.reseeds(alg, reason));
            }
            catch_up(&self.reseed_failures.with_label_values(&[alg.name()]), self.stats.reseed_failures(alg));
            catch_up(
                &self.self_test_failures.with_label_values(&[alg.name()]),
                self.stats.health_failures(alg),
            );
        }
        catch_up(&self.entropy_failures, self.stats.entropy_failures());
        catch_up(&self.log_lines_dropped, crate::telemetry::lines_dropped());
        let (exported, dropped, failed) = crate::telemetry::trace::span_counts();
        for (outcome, total) in [("exported", exported), ("dropped", dropped), ("failed", failed)] {
            catch_up(&self.trace_spans.with_label_values(&[outcome]), total);
        }
    }
}

impl Collector for LifecycleCollector {
    fn desc(&self) -> Vec<&Desc> {
        let mut d = self.reseeds.desc();
        d.extend(self.reseed_failures.desc());
        d.extend(self.self_test_failures.desc());
        d.extend(self.entropy_failures.desc());
        d.extend(self.log_lines_dropped.desc());
        d.extend(self.trace_spans.desc());
        d
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.sync();
        let mut m = self.reseeds.collect();
        m.extend(self.reseed_failures.collect());
        m.extend(self.self_test_failures.collect());
        m.extend(self.entropy_failures.collect());
        m.extend(self.log_lines_dropped.collect());
        m.extend(self.trace_spans.collect());
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_namespaced_and_documented() {
        let stats = Arc::new(Stats::default());
        stats.reseeded(Algorithm::Blake3, ReseedReason::Fork);
        let m = Metrics::new(stats);
        m.observe_bias(Algorithm::ChaCha20, 100, 50);
        let text = m.render();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            assert!(line.starts_with("drbgd_") || line.starts_with("process_"), "{line}");
        }
        #[cfg(target_os = "linux")]
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
        assert!(text.contains("drbgd_reseeds_total{alg=\"blake3\",reason=\"fork\"} 1"));
        assert!(text.contains("drbgd_output_bias_zscore_bucket{alg=\"chacha20\",le=\"0\"} 1"));
        assert!(text.contains("# HELP drbgd_bias_ones_total"));
    }
}
