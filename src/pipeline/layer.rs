//! The call pipeline as one typed tower layer (no boxed future, no boxed
//! body; hyper clones the service for each request, and a clone is a few reference counts).
//! It runs the steps in their order (see [the pipeline](super)): it observes the request
//! (`observe.rs`), admits its caller from the head (`admit.rs`), runs it (step 5, here: a GET
//! of a route that answers at once is called directly, the rest goes to the service below with
//! the admission in the request's extensions and the body under its read deadline, the headers
//! due by the request's), then records the response (`observe.rs`). Its own answers (refused,
//! shed, timed out, a panic below) are written as the route's row says.

use std::convert::Infallible;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::request::Parts;
use axum::http::{Method, Request};
use axum::response::Response;
use pin_project_lite::pin_project;
use tokio::time::Instant;
use tower::{Layer, Service};

use super::admit::{Caps, PUBLIC_BODY_TIMEOUT, PUBLIC_STREAM_LIFETIME, PlaceKind, Places, public_stream};
use super::deadline::{Lifetime, ReadDeadline};
use super::endpoint::{Charge, Endpoint, Endpoints, Guard, Render};
use super::observe::{Clock, Observation, X_REQUEST_ID, record};
use super::report::{Answer, Report};
use crate::callers::{Admission, Denied};
use crate::error::ApiError;
use crate::state::AppState;

/// Builds [`Front`] services.
#[derive(Clone, Debug)]
pub struct PipelineLayer(Arc<Shared>);

/// What every clone of the pipeline shares: one reference count to clone per request
/// (hyper clones the service for each), not one per field.
#[derive(Debug)]
struct Shared {
    state: AppState,
    /// The endpoint table, as the pipeline reads it: each route's guard, charge, dialect and
    /// handler.
    endpoints: Endpoints,
    /// The caps and per-peer limits requests are admitted under.
    caps: Caps,
    /// Time from the call to the response's headers.
    timeout: Duration,
    /// Time from the call to the request body's end.
    body_timeout: Duration,
    /// See [`PUBLIC_STREAM_LIFETIME`].
    stream_lifetime: Duration,
    /// See [`PipelineLayer::new`].
    direct: bool,
}

impl PipelineLayer {
    /// The pipeline over the shared state (metrics, request ids, log settings), with the
    /// caps (`server.concurrency_limit`, `server.peer_*`) and deadlines
    /// (`server.request_timeout_ms`, `server.body_read_timeout_ms`) configured, each route as
    /// its row of `endpoints` (the table) says; `direct`: a GET of a route that answers at once
    /// is answered by its row ([`Endpoint::answer`]), not the service below (which must serve
    /// the same endpoints: `http::router`'s).
    pub fn new(state: AppState, endpoints: Endpoints, direct: bool) -> Self {
        let server = &state.settings.server;
        let stream_lifetime = match server.max_connection_age_ms {
            0 => PUBLIC_STREAM_LIFETIME,
            ms => Duration::from_millis(ms),
        };
        PipelineLayer(Arc::new(Shared {
            caps: Caps::new(server),
            timeout: Duration::from_millis(server.request_timeout_ms),
            body_timeout: Duration::from_millis(server.body_read_timeout_ms),
            stream_lifetime,
            endpoints,
            direct,
            state,
        }))
    }
}

impl<S> Layer<S> for PipelineLayer {
    type Service = Pipeline<S>;

    fn layer(&self, inner: S) -> Pipeline<S> {
        Pipeline { inner, shared: self.0.clone() }
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct Pipeline<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S, B> Service<Request<B>> for Pipeline<S>
where
    S: Service<Request<ReadDeadline<B>>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = PipelineFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let shared = &*self.shared;
        let id = match request.headers().get(X_REQUEST_ID) {
            Some(id) => id.clone(),
            None => shared.state.request_ids.next_value(),
        };
        let mut observe = Observation::start(&shared.state, &shared.endpoints, &request, id);
        let span = observe.span.clone();
        let _in_request = span.enter();
        let start = observe.start;
        let guard = match (observe.endpoint, observe.grpc_method) {
            (Some(endpoint), _) => endpoint.guard,
            (None, Some((_, guard))) => guard,
            (None, None) => Guard::PUBLIC,
        };
        observe.public = guard.public();
        let stream = observe.public && public_stream(request.uri().path());
        // A timeout too large to add is none at all (a year is as good as for ever here).
        let deadline =
            (start.checked_add(shared.timeout)).unwrap_or_else(|| start + Duration::from_secs(365 * 86_400));
        let direct = observe.endpoint.filter(|e| {
            shared.direct && request.method() == Method::GET && e.serves_get() && e.answers_at_once()
        });
        let admitted = tracing::info_span!(target: crate::telemetry::trace::TRACE_TARGET, "admission")
            .in_scope(|| shared.caps.admit(&shared.state, &request, guard, stream, start));
        let (inner, places, admission) = match admitted {
            // Refused at once, never queued: nothing below runs, no body is read.
            Err(denied) => (Inner::Refused { denied: Some(denied) }, None, None),
            // Answered on the first poll, without the router (a GET's body, if any, is not
            // read). Not here: HTTP/2 calls the service on the connection's task and spawns
            // only the future, and the connection must not wait for a request's work.
            Ok((places, admission, kind)) => match direct {
                Some(endpoint) => {
                    let (parts, _body) = request.into_parts();
                    (Inner::Direct { endpoint, parts: Some(parts) }, Some(places), admission)
                }
                None => {
                    let (request, places) =
                        shared.prepare(request, (places, kind), admission.as_ref(), &observe, deadline);
                    let inner = match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
                        Ok(future) => Inner::Called { future: Box::pin(future) },
                        Err(_) => Inner::Refused { denied: Some(unnamed(panicked(), start)) },
                    };
                    (inner, places, admission)
                }
            },
        };
        if let Some(admission) = &admission {
            observe.caller = Some(admission.caller.clone());
        }
        let lifetime = stream.then(|| start.checked_add(shared.stream_lifetime).unwrap_or(deadline));
        PipelineFuture { inner, observe: Some(observe), places, admission, deadline, timer: None, lifetime }
    }
}

impl Shared {
    /// An admitted request made ready for the service below: its admission in its extensions
    /// (and on the beacon's rows, which bound each peer's requests waiting, its peer's key), the
    /// request id in a gRPC call's metadata, its body under its read deadline. Returned with the
    /// place the pipeline holds until the headers: none where the body holds it (a public
    /// request's, see [`super::admit::PUBLIC_CONCURRENCY`]).
    fn prepare<B>(
        &self,
        mut request: Request<B>,
        (mut places, kind): (Places, PlaceKind),
        admission: Option<&Admission>,
        observe: &Observation,
        deadline: Clock,
    ) -> (Request<ReadDeadline<B>>, Option<Places>) {
        if let Some(admission) = admission {
            request.extensions_mut().insert(admission.clone());
        }
        // The beacon bounds each peer's requests waiting for a round by this key.
        let waiting = observe.endpoint.is_some_and(|e| e.charge == Charge::PeerWaiting);
        if let Some(key) = places.peer_key().filter(|_| waiting) {
            request.extensions_mut().insert(key);
        }
        if let Some(gate) = places.gate.take() {
            request.extensions_mut().insert(gate);
        }
        // gRPC reads the id from the metadata for its records; REST handlers never do, and the
        // request's header map would grow for it.
        if observe.grpc() {
            request.headers_mut().insert(X_REQUEST_ID, observe.id.clone());
        }
        // A public request's place goes with its body (see PUBLIC_CONCURRENCY); a public
        // stream's with its response, for its lifetime (PUBLIC_STREAMS).
        let (body_timeout, places, body_places) = match kind {
            PlaceKind::Caller => (self.body_timeout, Some(places), None),
            PlaceKind::Public | PlaceKind::Open | PlaceKind::Signed => {
                (self.body_timeout.min(PUBLIC_BODY_TIMEOUT), None, Some(places))
            }
            PlaceKind::PublicStream => (self.stream_lifetime, Some(places), None),
        };
        let body_deadline = observe.start.checked_add(body_timeout).unwrap_or(deadline);
        (request.map(|body| ReadDeadline::new(body, body_deadline, body_places)), places)
    }
}

pin_project! {
    /// The response future of [`Front`].
    pub struct PipelineFuture<F> {
        #[pin]
        inner: Inner<F>,
        observe: Option<Observation>,
        places: Option<Places>,
        // The caller's admission, held (with its in-flight place) until the headers are ready.
        admission: Option<Admission>,
        deadline: Clock,
        // Armed only when the inner future is not ready on its first poll (boxed: the future
        // is moved several times on its way to hyper, and most never need it).
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
        // A public stream's end: its response body holds its place until then.
        lifetime: Option<Clock>,
    }
}

pin_project! {
    #[project = InnerProj]
    enum Inner<F> {
        // Boxed: the router's future is larger than the rest, and the direct GETs never hold it.
        Called { future: Pin<Box<F>> },
        Direct { endpoint: &'static Endpoint, parts: Option<Parts> },
        Refused { denied: Option<Denied> },
    }
}

impl<F> Future for PipelineFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let span = this.observe.as_ref().map(|o| o.span.clone()).unwrap_or_else(tracing::Span::none);
        let _in_request = span.enter();
        let render: Render = match this.observe.as_ref() {
            Some(observe) => observe.render,
            None => ApiError::render as Render,
        };
        // An answer of this layer's own (refused, shed, timed out, a panic below), or the
        // service's; an endpoint's comes with its report, the router's in its extensions.
        let (mut response, own, report) = match this.inner.as_mut().project() {
            InnerProj::Called { future } => match poll_called(future, *this.deadline, &mut *this.timer, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Called::Answered(mut response)) => {
                    let report = response.extensions_mut().remove::<Report>().unwrap_or_default();
                    (response, false, report)
                }
                Poll::Ready(Called::Panicked) => own_answer(panicked(), render),
                Poll::Ready(Called::Expired(error)) => {
                    // Out of time: the handler's future is dropped here, and with it whatever
                    // it held (a body read, a clone of the admission).
                    this.inner.set(Inner::Refused { denied: None });
                    own_answer(error, render)
                }
            },
            InnerProj::Direct { endpoint, parts } => {
                let state = this.observe.as_ref().map(|o| &o.state);
                answer_directly((endpoint, parts.take()), state, this.admission.as_ref(), render)
            }
            InnerProj::Refused { denied } => refused(denied.take(), this.observe.as_mut(), render),
        };
        // The headers are ready: the places under the cap and in the caller's count are free
        // for the next request (a streamed body holds its own clone of the admission), but
        // for a public stream's, which its body holds to its end.
        let places = this.places.take();
        if let (Some(end), false) = (*this.lifetime, own) {
            response = response.map(|body| axum::body::Body::new(Lifetime::new(body, end, places)));
        }
        let admitted_at = this.admission.take().map(|a| a.at);
        let response = match this.observe.take() {
            Some(observe) => record(observe, response, own, report, admitted_at),
            None => response,
        };
        Poll::Ready(Ok(response))
    }
}

/// What the router's future came to at a poll.
enum Called {
    /// Its response.
    Answered(Response),
    /// It panicked.
    Panicked,
    /// The request's deadline passed first (or its timer panicked): the error to answer.
    Expired(ApiError),
}

/// Step 5 through the router: polls its future and, while that is pending, the request's
/// deadline (the timer armed by the first poll that finds the future pending).
fn poll_called<F>(
    future: &mut Pin<Box<F>>,
    deadline: Clock,
    timer: &mut Option<Pin<Box<tokio::time::Sleep>>>,
    cx: &mut Context<'_>,
) -> Poll<Called>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
        Ok(Poll::Ready(Ok(response))) => Poll::Ready(Called::Answered(response)),
        Err(_) => Poll::Ready(Called::Panicked),
        Ok(Poll::Pending) => {
            // Inside the catch too: a runtime without a time driver panics here.
            let expired = catch_unwind(AssertUnwindSafe(|| {
                timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)))
                    .as_mut()
                    .poll(cx)
                    .is_ready()
            }));
            match expired {
                Ok(false) => Poll::Pending,
                Ok(true) => Poll::Ready(Called::Expired(ApiError::Timeout)),
                Err(_) => Poll::Ready(Called::Expired(panicked())),
            }
        }
    }
}

/// Step 5 for an endpoint called directly (its row, the request's head): its answer, a panic
/// in it answered 500. The pipeline's one hand-over to the endpoint.
fn answer_directly(
    (endpoint, parts): (&'static Endpoint, Option<Parts>),
    state: Option<&AppState>,
    admission: Option<&Admission>,
    render: Render,
) -> (Response, bool, Report) {
    let (Some(parts), Some(state)) = (parts, state) else {
        // Polled again after its end (a contract breach): an error, not a panic.
        return own_answer(ApiError::Internal, render);
    };
    match catch_unwind(AssertUnwindSafe(|| endpoint.answer(state, admission, &parts))) {
        Ok(Answer { response, report }) => (response, false, report),
        Err(_) => own_answer(panicked(), render),
    }
}

/// A refusal of steps 2 to 4, answered; the caller it names goes to the records.
fn refused(
    denied: Option<Denied>,
    observe: Option<&mut Observation>,
    render: Render,
) -> (Response, bool, Report) {
    let Some(Denied { caller, error, at }) = denied else {
        return own_answer(ApiError::Internal, render);
    };
    let answer = own_answer(error, render);
    if let (Some(caller), Some(observe)) = (caller, observe) {
        observe.caller = Some(caller);
        observe.caller_at = at;
    }
    answer
}

/// A refusal that names no caller.
fn unnamed(error: ApiError, at: Instant) -> Denied {
    Denied { caller: None, error, at }
}

/// An answer of the pipeline's own, written by `render` (the request's, see
/// [`Observation::render`]): problem+json, for a gRPC call its status (so a client sees
/// `UNAUTHENTICATED`, `RESOURCE_EXHAUSTED` or `DEADLINE_EXCEEDED` with `retry-after`, not an
/// HTTP status it cannot read), on a drop-in front-end's route the error as its service writes
/// it; with the error's code for the records.
fn own_answer(error: ApiError, render: Render) -> (Response, bool, Report) {
    let report = Report { code: Some(error.code()), ..Report::default() };
    (render(&error), true, report)
}

/// The error of a panic below: logged (without its message, which could hold anything) and
/// answered as a 500.
fn panicked() -> ApiError {
    tracing::error!("panic while serving a request; answered 500");
    ApiError::Internal
}
