//! The front of the API port's stack, as one typed tower layer (no boxed future, no boxed
//! body; hyper clones the service for each request, and a clone is a few reference counts): it
//! catches panics anywhere below it or in itself (a
//! 500 problem+json with everything below — never a dropped connection), gives every request
//! an id (the caller's `X-Request-Id` or a new one) and echoes it, marks every response
//! `no-store`, caps the requests in progress (past the cap: 503 `overloaded` at once, never a
//! queue), bounds the time to the response's headers (503 `timeout`), and observes every HTTP
//! request — latency by route, algorithm and status, error counts by code, the access line and
//! (with `log.audit`) the audit line — shed and timed-out requests included. gRPC calls pass
//! through observed per method by the gRPC service itself; those this layer answers (shed,
//! timed out, a panic) get a gRPC status and are observed and logged here.
//!
//! One layer instead of nine (panic catcher, request id, propagation, two header setters,
//! error handling, load shed, concurrency limit, timeout) and an axum `from_fn` middleware:
//! measured in benches/README.md. The panic catcher is tower-http's `CatchPanic` done here,
//! `catch_unwind` around the inner call and each poll, because there it boxed every response
//! body and answered panics without the request id, the metrics or the access line. The cap
//! and the timeout are tower's `load_shed` + `concurrency_limit` and `timeout` done here
//! because those allocated a semaphore future for every request (hyper clones the service per
//! request) and built a timer for every request; here the cap is one atomic counter and the
//! timer is armed only for a request that is not answered on its first poll.

use std::convert::Infallible;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method, Request, header};
use axum::response::{IntoResponse, Response};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::{Answer, Endpoint, Outcome, ROUTES};
use crate::error::ApiError;
use crate::state::AppState;

/// The request id header.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Builds [`Front`] services.
#[derive(Clone, Debug)]
pub struct FrontLayer {
    state: AppState,
    cap: Arc<Cap>,
    timeout: Duration,
    direct: bool,
}

impl FrontLayer {
    /// The front layer over the shared state (metrics, request ids, log settings), with the
    /// cap (`server.concurrency_limit`) and timeout (`server.request_timeout_ms`) configured;
    /// `direct`: a GET of a route of [`ROUTES`] is answered by its [`Endpoint`], not the
    /// service below (which must serve the same endpoints: [`super::router`]'s).
    pub fn new(state: AppState, direct: bool) -> Self {
        let server = &state.settings.server;
        let cap = Arc::new(Cap { in_progress: AtomicUsize::new(0), max: server.concurrency_limit });
        let timeout = Duration::from_millis(server.request_timeout_ms);
        FrontLayer { state, cap, timeout, direct }
    }
}

impl<S> Layer<S> for FrontLayer {
    type Service = Front<S>;

    fn layer(&self, inner: S) -> Front<S> {
        Front {
            inner,
            state: self.state.clone(),
            cap: self.cap.clone(),
            timeout: self.timeout,
            direct: self.direct,
        }
    }
}

/// The cap on requests in progress, shared by every clone of the layer: a request holds a
/// [`Slot`] from its call until its response's headers are ready (a streamed body goes on
/// without it, as with tower's `concurrency_limit`).
#[derive(Debug)]
struct Cap {
    in_progress: AtomicUsize,
    max: usize,
}

/// One request's place under the [`Cap`], given back when dropped.
struct Slot(Arc<Cap>);

impl Cap {
    /// A place, or `None` at the cap. A compare-and-swap on the bound, so that requests
    /// refused under contention are only those that really did not fit.
    fn enter(self: &Arc<Self>) -> Option<Slot> {
        self.in_progress
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max).then_some(n + 1))
            .ok()
            .map(|_| Slot(self.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.in_progress.fetch_sub(1, Ordering::AcqRel);
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct Front<S> {
    inner: S,
    state: AppState,
    cap: Arc<Cap>,
    /// Time from the call to the response's headers.
    timeout: Duration,
    /// See [`FrontLayer::new`].
    direct: bool,
}

impl<S, B> Service<Request<B>> for Front<S>
where
    S: Service<Request<B>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = FrontFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let observe = Observe::start(&self.state, &request);
        let id = match request.headers().get(X_REQUEST_ID) {
            Some(id) => id.clone(),
            None => {
                let id = self.state.request_ids.next_value();
                // gRPC reads it from the metadata for its audit line (tonic routes by path,
                // whatever the content type, so every path that is no REST route gets it);
                // REST handlers never do, and the request's header map would grow for it.
                if observe.route_index == UNMATCHED {
                    request.headers_mut().insert(X_REQUEST_ID, id.clone());
                }
                id
            }
        };
        // A timeout too large to add is none at all (a year is as good as for ever here).
        let deadline = (observe.start.checked_add(self.timeout))
            .unwrap_or_else(|| observe.start + Duration::from_secs(365 * 86_400));
        let direct = self.direct && request.method() == Method::GET;
        let endpoint = Endpoint::at(observe.route_index).filter(|_| direct);
        let observe = Some(observe);
        let slot = self.cap.enter();
        let inner = match (&slot, endpoint) {
            // Refused at once, never queued: the client retries (Retry-After) elsewhere.
            (None, _) => Inner::Refused { error: Some(ApiError::Overloaded) },
            // Answered on the first poll, without the router (a GET's body, if any, is not
            // read). Not here: HTTP/2 calls the service on the connection's task and spawns
            // only the future, and the connection must not wait for a request's work.
            (Some(_), Some(endpoint)) => {
                let (parts, _body) = request.into_parts();
                Inner::Direct { endpoint, parts: Some(parts) }
            }
            (Some(_), None) => match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
                Ok(future) => Inner::Called { future },
                Err(_) => Inner::Refused { error: Some(panicked()) },
            },
        };
        FrontFuture { inner, id, observe, slot, deadline, timer: None }
    }
}

pin_project! {
    /// The response future of [`Front`].
    pub struct FrontFuture<F> {
        #[pin]
        inner: Inner<F>,
        id: HeaderValue,
        observe: Option<Observe>,
        slot: Option<Slot>,
        deadline: Instant,
        // Armed only when the inner future is not ready on its first poll.
        #[pin]
        timer: Option<tokio::time::Sleep>,
    }
}

pin_project! {
    #[project = InnerProj]
    enum Inner<F> {
        Called { #[pin] future: F },
        Direct { endpoint: Endpoint, parts: Option<Parts> },
        Refused { error: Option<ApiError> },
    }
}

impl<F> Future for FrontFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let grpc = this.observe.as_ref().is_some_and(|o| o.grpc);
        // An answer of this layer's own (shed, timed out, a panic below), or the service's;
        // an endpoint's comes with its outcome, the others' outcome is in their extensions.
        let (mut response, own, outcome) = match this.inner.as_mut().project() {
            InnerProj::Called { future } => match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                Ok(Poll::Pending) => {
                    let deadline = *this.deadline;
                    let mut timer = this.timer.as_mut();
                    // Inside the catch too: a runtime without a time driver panics here.
                    let expired = catch_unwind(AssertUnwindSafe(|| {
                        if timer.is_none() {
                            timer.set(Some(tokio::time::sleep_until(deadline.into())));
                        }
                        timer.as_mut().as_pin_mut().is_some_and(|timer| timer.poll(cx).is_ready())
                    }));
                    match expired {
                        Ok(false) => return Poll::Pending,
                        Ok(true) => {
                            // Out of time: the handler's future is dropped here, and with it
                            // whatever it held (its caller's in-flight place, a body read).
                            this.inner.set(Inner::Refused { error: None });
                            (refusal(ApiError::Timeout, grpc), true, None)
                        }
                        Err(_) => {
                            this.inner.set(Inner::Refused { error: None });
                            (refusal(panicked(), grpc), true, None)
                        }
                    }
                }
                Ok(Poll::Ready(Ok(response))) => (response, false, None),
                Err(_) => (refusal(panicked(), grpc), true, None),
            },
            // The state is the observation's (taken only once this has answered).
            InnerProj::Direct { endpoint, parts } => match (parts.take(), this.observe.as_ref()) {
                (Some(parts), Some(Observe { state, .. })) => {
                    match catch_unwind(AssertUnwindSafe(|| endpoint.answer(state, &parts))) {
                        Ok(Answer { response, outcome }) => (response, false, Some(outcome)),
                        Err(_) => (refusal(panicked(), grpc), true, None),
                    }
                }
                // Polled again after its end (a contract breach): an error, not a panic.
                _ => (refusal(ApiError::Internal, grpc), true, None),
            },
            InnerProj::Refused { error } => {
                (refusal(error.take().unwrap_or(ApiError::Internal), grpc), true, None)
            }
        };
        // The headers are ready: the place under the cap is free for the next request.
        this.slot.take();
        if let Some(observe) = this.observe.take() {
            // A panic while recording (it would be a bug of ours) costs the line, not the
            // response.
            let outcome = outcome.as_ref().or_else(|| response.extensions().get::<Outcome>());
            if catch_unwind(AssertUnwindSafe(|| observe.finish(&response, outcome, this.id, own))).is_err() {
                tracing::error!("panic while recording a response");
            }
        }
        let headers = response.headers_mut();
        // Random output must never be cached by any proxy: on every response, errors included.
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        headers.insert(X_REQUEST_ID, std::mem::replace(this.id, HeaderValue::from_static("")));
        Poll::Ready(Ok(response))
    }
}

/// An answer of the front layer's own: problem+json, or for a gRPC call its status (so a
/// client sees `RESOURCE_EXHAUSTED` / `DEADLINE_EXCEEDED` with `retry-after`, not an HTTP 503
/// it cannot read), with the error's code for the records.
fn refusal(error: ApiError, grpc: bool) -> Response {
    if !grpc {
        return error.into_response();
    }
    let code = error.code();
    let mut response = error.to_status().into_http::<axum::body::Body>();
    Outcome::of(&mut response).code = Some(code);
    response
}

/// The error of a panic below: logged (without its message, which could hold anything) and
/// answered as a 500.
fn panicked() -> ApiError {
    tracing::error!("panic while serving a request; answered 500");
    ApiError::Internal
}

/// One request being observed. Dropped before it finishes (the client went away before the
/// response was ready), it still leaves the in-flight gauge as it found it.
struct Observe {
    state: AppState,
    /// The index of the route template in [`ROUTES`] ([`UNMATCHED`] for none).
    route_index: usize,
    method: Method,
    start: Instant,
    /// A gRPC call: observed per method by the gRPC service, unless this layer answered it
    /// (shed, timed out, a panic) and the gRPC service never saw it.
    grpc: bool,
}

impl Observe {
    /// Starts observing. A gRPC call is decided by the path as well as the content type, so
    /// a REST request that claims `application/grpc` is still observed, logged and audited.
    fn start<B>(state: &AppState, request: &Request<B>) -> Observe {
        let route_index = route_index(request.uri().path());
        let grpc = route_index == UNMATCHED
            && request
                .headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        if !grpc {
            state.metrics.in_flight.inc();
        }
        let method = request.method().clone();
        Observe { state: state.clone(), route_index, method, start: Instant::now(), grpc }
    }

    /// Records the response: metrics, the access line, the audit line. Never logs output
    /// bytes, keys, certificates or the query string's values beyond n/alg.
    fn finish(self, response: &Response, outcome: Option<&Outcome>, id: &HeaderValue, own: bool) {
        let metrics = &self.state.metrics;
        let code = outcome.and_then(|o| o.code);
        if let Some(code) = code {
            metrics.errors.with_label_values(&[code]).inc();
        }
        if self.grpc && !own {
            return;
        }
        let elapsed = self.start.elapsed();
        let served = outcome.and_then(|o| o.served);
        let alg = served.map_or("none", |s| s.alg.name());
        let status = response.status();
        metrics.observe_http(self.route_index, served.map(|s| s.alg), status, elapsed.as_secs_f64());
        let n = served.map_or(0, |s| s.n_bits);
        let caller = outcome.and_then(|o| o.caller.as_deref()).unwrap_or("");
        let request_id = id.to_str().unwrap_or("");
        let route = ROUTES.get(self.route_index).copied().unwrap_or("unmatched");
        let access = crate::telemetry::Access {
            request_id,
            caller,
            method: self.method.as_str(),
            route,
            alg,
            n,
            status: status.as_u16(),
            code: code.unwrap_or(""),
            latency_us: elapsed.as_micros() as u64,
        };
        access.log();
        if self.state.settings.log.audit {
            access.audit("http").log();
        }
    }
}

impl Drop for Observe {
    fn drop(&mut self) {
        if !self.grpc {
            self.state.metrics.in_flight.dec();
        }
    }
}

/// The index of a path's entry in [`ROUTES`] ([`UNMATCHED`] for a path that is none of them).
/// The routes are exact paths, so the path a route matches is its template.
fn route_index(path: &str) -> usize {
    ROUTES.iter().position(|r| *r == path).unwrap_or(UNMATCHED)
}

/// The route index of a path that is no REST route (label `unmatched`; gRPC's paths).
const UNMATCHED: usize = ROUTES.len();
