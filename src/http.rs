//! The HTTP API: the router and its one tower stack. Handlers live in `http/*`, grouped by
//! resource; they only translate between HTTP and [`crate::service`].

pub mod admit;
mod meta;
pub mod openapi;
mod params;
mod random;
pub mod request_id;
mod values;

use std::time::{Duration, Instant};

use axum::error_handling::HandleErrorLayer;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{BoxError, Router};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::drbg::Algorithm;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// Response header naming the algorithm that produced the output.
pub const X_DRBG_ALG: HeaderName = HeaderName::from_static("x-drbg-alg");
/// Response header with the number of bits served.
pub const X_DRBG_BITS: HeaderName = HeaderName::from_static("x-drbg-bits");
const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Every API route template (also the bounded set of `route` label values, with `unmatched`).
pub const ROUTES: &[&str] =
    &["/bits", "/bytes", "/token", "/nonce", "/uuid", "/int", "/algorithms", "/usage", "/openapi.json"];

/// The API router: routes (with per-route auth and observation) wrapped once, as a whole, in
/// the global stack, so limits such as the concurrency cap are shared by every route.
pub fn router(state: AppState, grpc: Router) -> Router {
    let rest = Router::new()
        .route("/bits", get(random::get_bits).post(random::post_bits))
        .route("/bytes", get(random::get_bytes))
        .route("/token", get(values::token))
        .route("/nonce", get(values::nonce))
        .route("/uuid", get(values::uuid))
        .route("/int", get(values::int))
        .route("/algorithms", get(meta::algorithms))
        .route("/usage", get(meta::usage))
        // Every route above has a caller (`anonymous` when auth is off): credentials, route
        // policy, in-flight cap, request rate; rate-limit fields on the response.
        .route_layer(middleware::from_fn_with_state(state.clone(), admit::admit));
    let rest = rest
        // The contract is public.
        .route("/openapi.json", get(openapi::get))
        // A 405 as problem+json on every route (added after all of them); axum keeps Allow.
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone());
    let api = rest
        // gRPC admits callers in its own interceptor (same rules, gRPC status codes).
        .merge(grpc)
        .fallback(not_found)
        // Latency/status metrics, the access log line and the audit line.
        .layer(middleware::from_fn_with_state(state.clone(), observe));
    with_stack(api, &state)
}

/// The one global middleware stack, outermost first, each layer there for one reason.
fn with_stack(api: Router, state: &AppState) -> Router {
    let timeout = Duration::from_millis(state.settings.server.request_timeout_ms);
    let shed_state = state.clone();
    let stack = ServiceBuilder::new()
        // Outermost, so that no panic anywhere below (a layer or a handler) can drop a
        // connection: it becomes a 500 problem+json, no-store, with nothing revealed.
        .layer(CatchPanicLayer::custom(|_| panic_response()))
        // Random output must never be cached by any proxy: on every response, errors included.
        .layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
        .layer(SetResponseHeaderLayer::overriding(header::PRAGMA, HeaderValue::from_static("no-cache")))
        // Correlate logs and client reports: keep the caller's X-Request-Id or make one from
        // the process prefix and a counter (no syscall, no panic path: see `request_id`)...
        .layer(SetRequestIdLayer::new(X_REQUEST_ID, state.request_ids.clone()))
        // ...and echo it on the response.
        .layer(PropagateRequestIdLayer::new(X_REQUEST_ID))
        // Turn the errors of the layers below into problem+json 503s (and count them).
        .layer(HandleErrorLayer::new(move |err: BoxError| tower_error(shed_state.clone(), err)))
        // Refuse at once when full (503 + Retry-After) instead of queueing without bound...
        .load_shed()
        // ...the bound being this many requests in progress, across all routes.
        .concurrency_limit(state.settings.server.concurrency_limit)
        // Headers must be ready in time (streamed bodies continue past it).
        .timeout(timeout);
    Router::new().fallback_service(stack.service(api))
}

/// The 500 for a caught panic; built here because the header layers sit inside the catcher.
fn panic_response() -> Response {
    let mut response = ApiError::Internal.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

async fn tower_error(state: AppState, err: BoxError) -> Response {
    let error = if err.is::<tower::load_shed::error::Overloaded>() {
        ApiError::Overloaded
    } else if err.is::<tower::timeout::error::Elapsed>() {
        ApiError::Timeout
    } else {
        ApiError::Internal
    };
    state.metrics.errors.with_label_values(&[error.code()]).inc();
    error.into_response()
}

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// What a response served, for the metrics and the access log: handlers attach it, and
/// [`observe`] reads it (never the response headers).
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// The generator.
    pub alg: Algorithm,
    /// Random bits served (0 where the count is not a number of bits, as for `/int`).
    pub n_bits: u64,
}

/// Attaches [`Served`] and the `X-Drbg-Alg` / `X-Drbg-Bits` headers to a response.
pub fn served(mut response: Response, alg: Algorithm, n_bits: u64) -> Response {
    let h = response.headers_mut();
    h.insert(X_DRBG_ALG, HeaderValue::from_static(alg.name()));
    if n_bits > 0 {
        h.insert(X_DRBG_BITS, HeaderValue::from(n_bits));
    }
    response.extensions_mut().insert(Served { alg, n_bits });
    response
}

/// Records latency by route template, algorithm and status; counts errors by code; writes
/// the access log line and (with `log.audit`) the audit line. Never logs output bytes, keys,
/// certificates or the query string's values beyond n/alg.
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |m| route_label(m.as_str()));
    // A gRPC call is recorded per method by the gRPC service itself. Decided by the route as
    // well as the content type, so a REST request that claims `application/grpc` is still
    // observed, logged and audited.
    let grpc = route == "unmatched"
        && request
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        return next.run(request).await;
    }
    // A cheap clone (shared bytes), not a String: the line is formatted from it below.
    let request_id = request.headers().get(X_REQUEST_ID).cloned();
    let method = request.method().clone();
    let start = Instant::now();
    state.metrics.in_flight.inc();
    let response = next.run(request).await;
    state.metrics.in_flight.dec();
    let elapsed = start.elapsed();
    let served = response.extensions().get::<Served>().copied();
    let alg = served.map_or("none", |s| s.alg.name());
    let status = response.status();
    state
        .metrics
        .http_duration
        .with_label_values(&[route, alg, status.as_str()])
        .observe(elapsed.as_secs_f64());
    let code = response.extensions().get::<ErrorCode>().map(|c| c.0);
    if let Some(code) = code {
        state.metrics.errors.with_label_values(&[code]).inc();
    }
    let n = served.map_or(0, |s| s.n_bits);
    let caller = response.extensions().get::<admit::CallerName>().map_or("", |c| &c.0);
    let request_id = request_id.as_ref().and_then(|v| v.to_str().ok()).unwrap_or("");
    tracing::info!(
        target: "drbgd::access",
        request_id, caller, method = method.as_str(), route, alg, n, status = status.as_u16(), code = code.unwrap_or(""),
        latency_us = elapsed.as_micros() as u64,
        "request"
    );
    if state.settings.log.audit {
        let code = code.unwrap_or("");
        let status = status.as_u16();
        crate::telemetry::Audit { transport: "http", request_id, caller, route, alg, n, status, code }.log();
    }
    response
}

/// Maps a matched path to its entry in [`ROUTES`] (a `&'static str`, so labels stay bounded).
fn route_label(path: &str) -> &'static str {
    ROUTES.iter().find(|r| **r == path).copied().unwrap_or("unmatched")
}
