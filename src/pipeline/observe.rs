//! Steps 1 and 6 of the pipeline: observing a request from its head (its id, route or gRPC
//! method, label, start, server span, how the pipeline's own answers on it are written) and
//! recording its response once the headers are ready: metrics, one access line and (with
//! `log.audit`) one audit line for every request, refused, shed, timed out, panicked and
//! abandoned ones included, and the headers the pipeline adds to every response (`no-store`
//! or the route's own `Cache-Control`, the request id, `traceresponse`, the caller's
//! rate-limit fields).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method, Request, header};
use axum::response::Response;
use tokio::time::Instant;

use super::endpoint::{Endpoint, Endpoints, Guard, Render};
use super::problem::grpc_error;
use super::ratelimit::{RATELIMIT, RATELIMIT_POLICY, current_field, policy_field};
use super::report::Report;
use crate::callers::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// The time deadlines are measured in: tokio's clock (the one its timers run on, which a test
/// or a fuzz target may pause), not the wall of `std`.
pub(super) type Clock = tokio::time::Instant;

/// The request id header.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Step 6, once the headers are ready: the records (metrics, the access and audit lines) and
/// the pipeline's headers (the caller's rate-limit fields, `Cache-Control`, the request id,
/// `traceresponse`). `own`: an answer of the pipeline's own.
pub(super) fn record(
    mut observe: Observation,
    mut response: Response,
    own: bool,
    report: Report,
    mut admitted_at: Option<Instant>,
) -> Response {
    if let Some((caller, at)) = &report.named {
        observe.caller = Some(caller.clone());
        admitted_at = Some(*at);
    }
    if let Some(caller) = &observe.caller {
        rate_limit_fields(&mut response, caller, admitted_at.unwrap_or(observe.caller_at));
    }
    // A panic while recording (it would be a bug of ours) costs the line, not the response.
    if catch_unwind(AssertUnwindSafe(|| observe.finish(&response, &report, own))).is_err() {
        tracing::error!("panic while recording a response");
    }
    let headers = response.headers_mut();
    // Random output must never be cached by any proxy: on every response, errors included,
    // but the beacon's rounds and chain info, public and the same for everyone, which say
    // how long they keep (see `Report::cache_control`).
    match report.cache_control {
        Some(value) if !own => {
            headers.insert(header::CACHE_CONTROL, value);
        }
        _ => {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        }
    }
    headers.insert(X_REQUEST_ID, std::mem::replace(&mut observe.id, HeaderValue::from_static("")));
    if let Some(value) = crate::telemetry::trace::traceresponse(&observe.span) {
        headers.insert(HeaderName::from_static("traceresponse"), value);
    }
    response
}

/// `RateLimit-Policy` and `RateLimit` (as of `at`, the admission decision) for a caller with a
/// rate quota: HTTP headers, or a gRPC call's initial (or trailers-only) metadata.
fn rate_limit_fields(response: &mut Response, caller: &Caller, at: Instant) {
    // Rendered here from the caller's quota: the callers' domain holds no header values.
    if let Some(policy) = policy_field(&caller.quota) {
        let headers = response.headers_mut();
        headers.insert(HeaderName::from_static(RATELIMIT_POLICY), policy);
        if let Some(now) = current_field(caller, at) {
            headers.insert(HeaderName::from_static(RATELIMIT), now);
        }
    }
}

/// One request being observed. Dropped before it finishes (the client went away before the
/// response was ready), it still leaves its access line (status 499, gRPC `CANCELLED`) and
/// the in-flight gauge as it found it.
pub(super) struct Observation {
    pub(super) state: AppState,
    /// The index of the route's row in the table ([`UNMATCHED`] for none).
    pub(super) route_index: usize,
    /// The route's row (none: no route).
    pub(super) endpoint: Option<&'static Endpoint>,
    /// A gRPC method of the randomness service: its name and guard.
    pub(super) grpc_method: Option<(&'static str, Guard)>,
    /// The route's label in the access line: a REST route template, a gRPC method of the
    /// randomness service, `grpc.health`, `grpc.reflection`, or `unmatched`.
    label: &'static str,
    /// A gRPC call (by its path, or its content type on no REST route): answered with gRPC
    /// statuses, observed per method.
    grpc_call: bool,
    /// How the pipeline's own answers are written: a gRPC status for a gRPC call, as the
    /// route's row says on a route, problem+json on none.
    pub(super) render: Render,
    method: Method,
    pub(super) start: Clock,
    /// The request id, echoed on the response.
    pub(super) id: HeaderValue,
    /// The caller, once named (admitted, or refused by name).
    pub(super) caller: Option<Arc<Caller>>,
    /// When a refused caller was refused (its rate-limit fields are as of then).
    pub(super) caller_at: Instant,
    /// A public route: no caller is named in its lines, refused or not.
    pub(super) public: bool,
    /// Recorded: nothing left for the drop.
    done: bool,
    /// The request's OpenTelemetry server span (disabled with traces off), ended with this.
    pub(super) span: tracing::Span,
}

impl Observation {
    /// A gRPC call: answered with gRPC statuses, observed per method.
    pub(super) fn grpc(&self) -> bool {
        self.grpc_call
    }

    /// Starts observing, the route's row read from `endpoints`. A gRPC call is decided by the
    /// path as well as the content type, so a REST request that claims `application/grpc` is
    /// still answered as REST, and a call of a gRPC method (which tonic serves whatever the
    /// content type) is answered as gRPC.
    pub(super) fn start<B>(
        state: &AppState,
        endpoints: &Endpoints,
        request: &Request<B>,
        id: HeaderValue,
    ) -> Observation {
        let path = request.uri().path();
        // A route the configuration does not serve is none at all.
        let index = endpoints.served(path, state);
        let route_index = index.unwrap_or(UNMATCHED);
        let endpoint = index.and_then(|i| endpoints.at(i));
        let grpc_method = if route_index == UNMATCHED { endpoints.grpc_method(path) } else { None };
        let grpc_call = route_index == UNMATCHED
            && (grpc_method.is_some()
                || request
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc")));
        let render: Render = match endpoint {
            Some(endpoint) => endpoint.errors,
            None if grpc_call => grpc_error as Render,
            None => ApiError::render as Render,
        };
        let label = match (endpoint, grpc_method) {
            (Some(endpoint), _) => endpoint.label,
            (None, Some((name, _))) => name,
            (None, None) if path.starts_with("/grpc.health.") => "grpc.health",
            (None, None) if path.starts_with("/grpc.reflection.") => "grpc.reflection",
            (None, None) => "unmatched",
        };
        if !grpc_call {
            state.metrics.in_flight.inc();
        }
        let method = request.method().clone();
        let start = Clock::now();
        let (caller, caller_at, public, done) = (None, start, false, false);
        // A bounded name (never a path the request made up): the route template, a method of
        // the randomness service by its full name, or the label of the rest.
        let span_name = || match grpc_method {
            // The path is the method's full name (`/drbgd.v1.RandomnessService/GetBits`).
            Some(_) => std::borrow::Cow::Borrowed(path.strip_prefix('/').unwrap_or(path)),
            None => std::borrow::Cow::Borrowed(label),
        };
        let span =
            crate::telemetry::trace::server_span(request.headers(), span_name, method.as_str(), grpc_call);
        Observation {
            state: state.clone(),
            route_index,
            endpoint,
            grpc_method,
            label,
            grpc_call,
            render,
            method,
            start,
            id,
            caller,
            caller_at,
            public,
            done,
            span,
        }
    }

    /// Records the response: metrics, the access line, the audit line. Never logs output
    /// bytes, keys, certificates or the query string's values beyond n/alg.
    pub(super) fn finish(&mut self, response: &Response, report: &Report, own: bool) {
        self.done = true;
        let metrics = &self.state.metrics;
        let served = report.served;
        let alg = served.map_or("none", |s| s.alg.name());
        let elapsed = self.start.elapsed();
        let (status, code) = if self.grpc() {
            let status = grpc_status(response);
            let code = report.code.or_else(|| grpc_error_code(response, status));
            (status, code)
        } else {
            (response.status().as_u16(), report.code)
        };
        // Errors the gRPC service answered are counted there, with their latency.
        if let Some(code) = code
            && (!self.grpc() || own)
        {
            metrics.errors.with_label_values(&[code]).inc();
        }
        if self.grpc() {
            if own {
                let code_name = crate::error::grpc_code_name(tonic::Code::from(i32::from(status)));
                let method = self.grpc_method.map_or("other", |(name, _)| name);
                metrics
                    .grpc_duration
                    .with_label_values(&[method, "none", code_name])
                    .observe(elapsed.as_secs_f64());
            }
        } else {
            metrics.observe_http(
                (self.route_index, self.label),
                served.map(|s| s.alg),
                response.status(),
                elapsed.as_secs_f64(),
            );
        }
        if !report.recorded_at_end {
            let (n, code) = (served.map_or(0, |s| s.n_bits), code.unwrap_or(""));
            let receipt = (report.serial.as_deref().unwrap_or(""), report.ticket.as_deref().unwrap_or(""));
            self.line(alg, n, status, code, receipt, elapsed);
        }
    }

    /// The access line and, with `log.audit`, the audit line (with the serial of the receipt
    /// served and the ticket it used, if any).
    fn line(
        &self,
        alg: &'static str,
        n: u64,
        status: u16,
        code: &'static str,
        (serial, ticket): (&str, &str),
        elapsed: Duration,
    ) {
        let caller = match &self.caller {
            Some(caller) => caller.name(),
            // A public route names none; a request refused before its caller was named: `unknown`.
            None if self.public || code.is_empty() => "",
            None => crate::callers::registry::UNKNOWN,
        };
        crate::telemetry::trace::record_end(&self.span, caller, alg, n, status, code, self.grpc());
        let trace_id = crate::telemetry::trace::trace_id(&self.span);
        let access = crate::telemetry::Access {
            request_id: self.id.to_str().unwrap_or(""),
            trace_id: trace_id.as_deref().unwrap_or(""),
            caller,
            method: self.method.as_str(),
            route: self.label,
            alg,
            n,
            status,
            code,
            latency_us: elapsed.as_micros() as u64,
        };
        access.log();
        // A request refused because the audit log is backlogged was not served, and its audit
        // line would only add to the backlog (and without bound, under a flood): it leaves
        // its access line (which may be dropped) and its count in drbgd_errors_total.
        if self.state.settings.log.audit && code != ApiError::AuditUnavailable.code() {
            access.audit(if self.grpc() { "grpc" } else { "http" }).with_receipt(serial, ticket).log();
        }
    }
}

impl Drop for Observation {
    fn drop(&mut self) {
        if !self.grpc() {
            self.state.metrics.in_flight.dec();
        }
        if !self.done {
            // The client went away before the response's headers: one line all the same.
            let error = ApiError::ClientClosed;
            let (status, code) = if self.grpc() {
                (error.grpc_code() as u16, "cancelled")
            } else {
                (error.status().as_u16(), error.code())
            };
            if !self.grpc() {
                let seconds = self.start.elapsed().as_secs_f64();
                self.state.metrics.observe_http(
                    (self.route_index, self.label),
                    None,
                    error.status(),
                    seconds,
                );
            }
            self.line("none", 0, status, code, ("", ""), self.start.elapsed());
        }
    }
}

/// The gRPC status of a response at its headers: `grpc-status` of a trailers-only response
/// (an error), else 0 (the call is under way; a stream's end is recorded by the service).
fn grpc_status(response: &Response) -> u16 {
    response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The machine code of a gRPC error: the [`ApiError`]'s, which the service attaches to its
/// status; for an error of tonic's own (a message it cannot decode, one too large), the
/// status code's name.
fn grpc_error_code(response: &Response, status: u16) -> Option<&'static str> {
    if status == 0 {
        return None;
    }
    let own = response
        .extensions()
        .get::<tonic::Status>()
        .and_then(|s| std::error::Error::source(s))
        .and_then(|e| e.downcast_ref::<ApiError>())
        .map(ApiError::code);
    own.or_else(|| Some(crate::error::grpc_code_name(tonic::Code::from(i32::from(status)))))
}

/// The route index of a path that is no REST route (label `unmatched`; gRPC's paths).
const UNMATCHED: usize = crate::metrics::MAX_ROUTE_LABELS;
