//! The call pipeline of the API port, for REST and gRPC alike, as one typed tower layer (no
//! boxed future, no boxed body; hyper clones the service for each request, and a clone is a
//! few reference counts). For each request, in this order:
//!
//! 1. **Observe**: a request id (the caller's `X-Request-Id` or a new one), the route or gRPC
//!    method, the start time.
//! 2. **Authorize from the head**: the guard of the route's registry row (`Endpoint::guard`,
//!    `grpc_guard`) names the caller as the row's identity says (a bearer key or client
//!    certificate, Vault's token, an AWS SigV4 signature's head) and checks its policy,
//!    before any body is read and before the request takes any shared capacity. Unknown or
//!    refused callers are answered at once (401/403; gRPC `UNAUTHENTICATED` /
//!    `PERMISSION_DENIED`). `/openapi.json`, the receipts' `/keys` and `/verify`, gRPC health
//!    and reflection are public.
//! 3. **The server's cap** on requests in progress (`server.concurrency_limit`; public
//!    requests have a small cap of their own, [`PUBLIC_CONCURRENCY`]): past it, 503
//!    `overloaded` with `Retry-After` at once, never a queue; the caller's quota untouched.
//!    With `log.audit` on and the log sink backlogged, 503 `audit_unavailable` instead.
//!    Every request without credentials (public routes, `anonymous` on an open route) first
//!    takes a place of its peer's (`server.peer_*`: 429 `peer_concurrency_limited` /
//!    `peer_rate_limited`), so one address cannot take the pool others share. A signed request
//!    (KMS's), whose proof is in its body, takes no shared place at all until it is verified:
//!    only its connection's one place for a signed body.
//! 4. **The caller's quota**: an in-flight place and a request token (429).
//! 5. **Run**: a GET of a REST route's exact path goes straight to its [`Endpoint`]; the rest
//!    to the router (tonic for gRPC), with the admission in the request's extensions and the
//!    body under a read deadline (`server.body_read_timeout_ms`). The response's headers are
//!    due within `server.request_timeout_ms` (503 `timeout`; streamed bodies go on).
//! 6. **Record**: metrics, one access line and (with `log.audit`) one audit line for every
//!    request, refused, shed, timed out, panicked and abandoned ones included, for gRPC as for
//!    REST; `no-store` (but on the beacon's public rounds and chain info, which name their
//!    own `Cache-Control`), the request id and the caller's rate-limit fields on every response.
//!
//! Panics anywhere below or in here become a 500 problem+json (a gRPC `INTERNAL`), never a
//! dropped connection. The cap is one atomic counter and the timer is armed only for a request
//! that is not answered on its first poll (tower's `load_shed` + `concurrency_limit` and
//! `timeout` allocate per request; measured in benches/README.md).

use std::convert::Infallible;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

/// The time deadlines are measured in: tokio's clock (the one its timers run on, which a test
/// or a fuzz target may pause), not the wall of `std`.
type Clock = tokio::time::Instant;

use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method, Request, header};
use axum::response::Response;
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::deadline::{Lifetime, ReadDeadline};
use super::registry::{Dialect, GRPC_SERVICE_PREFIX, Guard, Identity, Limits, grpc_guard, public_stream};
use super::{Record, RecordedResponse};
use crate::callers::headers::{RATELIMIT, RATELIMIT_POLICY, current_field};
use crate::callers::peer::{Peer, PeerKey, PeerLimits, PeerPlace, PeerTable, SignedPlace, client_addr};
use crate::callers::sigv4::SignedRequest;
use crate::callers::{Admission, Authorized, Caller, ClientIdentity, Denied};
use crate::error::ApiError;
use crate::route::{Endpoint, ROUTES};
use crate::state::AppState;

/// The request id header.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Builds [`Front`] services.
#[derive(Clone, Debug)]
pub struct FrontLayer(Arc<Shared>);

/// What every clone of the front layer shares: one reference count to clone per request
/// (hyper clones the service for each), not one per field.
#[derive(Debug)]
struct Shared {
    state: AppState,
    cap: Arc<Cap>,
    /// See [`PUBLIC_CONCURRENCY`].
    public_cap: Arc<Cap>,
    /// See [`PUBLIC_STREAMS`].
    public_stream_cap: Arc<Cap>,
    /// See [`OPEN_CONCURRENCY`].
    open_cap: Arc<Cap>,
    /// The per-peer limits of every request without credentials (`[server] peer_*`).
    peers: Arc<PeerTable>,
    /// See [`ServerSettings::trusted_proxies`](crate::config::ServerSettings).
    trusted_proxies: Vec<ipnet::IpNet>,
    /// Time from the call to the response's headers.
    timeout: Duration,
    /// Time from the call to the request body's end.
    body_timeout: Duration,
    /// See [`PUBLIC_STREAM_LIFETIME`].
    stream_lifetime: Duration,
    /// See [`FrontLayer::new`].
    direct: bool,
}

impl FrontLayer {
    /// The front layer over the shared state (metrics, request ids, log settings), with the
    /// cap (`server.concurrency_limit`) and deadlines (`server.request_timeout_ms`,
    /// `server.body_read_timeout_ms`) configured; `direct`: a GET of a route of [`ROUTES`] is
    /// answered by its [`Endpoint`], not the service below (which must serve the same
    /// endpoints: [`super::router`]'s).
    pub fn new(state: AppState, direct: bool) -> Self {
        let server = &state.settings.server;
        // Validated with the settings (an unparsable entry never gets here).
        let trusted_proxies = server.trusted_proxy_nets().unwrap_or_default();
        let peers = PeerTable::new(PeerLimits {
            max_in_flight: server.peer_max_in_flight,
            max_streams: server.peer_max_streams,
            requests_per_second: server.peer_requests_per_second,
            burst: f64::from(server.peer_burst),
            table_size: server.peer_table_size,
        });
        let cap = |max: usize| Arc::new(Cap { in_progress: AtomicUsize::new(0), max });
        let limit = server.concurrency_limit;
        let stream_lifetime = match server.max_connection_age_ms {
            0 => PUBLIC_STREAM_LIFETIME,
            ms => Duration::from_millis(ms),
        };
        FrontLayer(Arc::new(Shared {
            cap: cap(limit),
            public_cap: cap(limit.min(PUBLIC_CONCURRENCY)),
            public_stream_cap: cap(limit.min(PUBLIC_STREAMS)),
            open_cap: cap(limit.min(OPEN_CONCURRENCY)),
            peers,
            trusted_proxies,
            timeout: Duration::from_millis(server.request_timeout_ms),
            body_timeout: Duration::from_millis(server.body_read_timeout_ms),
            stream_lifetime,
            direct,
            state,
        }))
    }
}

impl<S> Layer<S> for FrontLayer {
    type Service = Front<S>;

    fn layer(&self, inner: S) -> Front<S> {
        Front { inner, shared: self.0.clone() }
    }
}

/// Public requests (no caller: `/openapi.json`, `/keys`, `/verify`, gRPC health and reflection,
/// paths that are no route) in progress at once, at most: they have a cap of their own, so that
/// clients without credentials never take a place an authorized caller needs. A public request
/// that goes to the router holds its place until its body is dropped (a reflection stream, to
/// its end), and its body is due within [`PUBLIC_BODY_TIMEOUT`].
pub const PUBLIC_CONCURRENCY: usize = 64;
/// Requests of `anonymous` on a route open to requests without credentials (`[pollen]
/// anonymous`) in progress at once, at most: a cap of their own, as public requests have.
pub const OPEN_CONCURRENCY: usize = 64;
/// The body deadline of a public request (the configured one if shorter): a health check's
/// message comes at once.
pub const PUBLIC_BODY_TIMEOUT: Duration = Duration::from_secs(2);
/// Public streams (gRPC health `Watch`, reflection sessions) in progress at once, at most:
/// a cap of their own, so that streams held open never take the places of health checks.
pub const PUBLIC_STREAMS: usize = 16;
/// How long a public stream may last when connections have no maximum age: it holds its place
/// until it ends, and it is reset then. With `server.max_connection_age_ms` (the default, an
/// hour), that age is the lifetime: a connection is asked to close then anyway, so a
/// health-checking client re-opens its `Watch` no more often than it reconnects.
pub const PUBLIC_STREAM_LIFETIME: Duration = Duration::from_secs(3600);

/// A cap on requests in progress, shared by every clone of the layer: a request holds a
/// place from its admission until its response's headers are ready (a streamed body goes
/// on without it, as with tower's `concurrency_limit`).
#[derive(Debug)]
struct Cap {
    in_progress: AtomicUsize,
    max: usize,
}

/// One request's place under a [`Cap`], given back when dropped.
struct CapPlace(Arc<Cap>);

/// What one request holds while it is in progress (see [`Class`]): a place under a cap, its
/// peer's place, or its connection's one place for a signed body. Given back when dropped.
#[derive(Default)]
pub(super) struct Slot {
    _cap: Option<CapPlace>,
    _peer: Option<PeerPlace>,
    _signed: Option<SignedPlace>,
}

impl Slot {
    /// The peer whose place it holds, if any (a request without credentials).
    fn peer_key(&self) -> Option<PeerKey> {
        self._peer.as_ref().map(PeerPlace::key)
    }
}

impl Cap {
    /// A place, or `None` at the cap. A compare-and-swap on the bound, so that requests
    /// refused under contention are only those that really did not fit.
    fn enter(self: &Arc<Self>) -> Option<CapPlace> {
        self.in_progress
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max).then_some(n + 1))
            .ok()
            .map(|_| CapPlace(self.clone()))
    }
}

impl Drop for CapPlace {
    fn drop(&mut self) {
        self.0.in_progress.fetch_sub(1, Ordering::AcqRel);
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct Front<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> Front<S> {
    /// Steps 2 to 4 of the pipeline: the caller authorized from the head, a place under the
    /// cap, the caller's quota. `None` admission: a public route, under its own cap. Also the
    /// class of the place taken, which says how the body is read.
    fn admit<B>(
        &self,
        request: &Request<B>,
        guard: Guard,
        stream: bool,
        now: Instant,
    ) -> Result<(Slot, Option<Admission>, Class), Denied> {
        // Nothing is served that could not be audited: while the log is backlogged every
        // request is refused first, before its credentials are read, so that no refusal adds
        // an audit line either (the backlog cannot be grown by requests that are not served).
        if crate::telemetry::audit_unavailable(self.shared.state.settings.log.audit) {
            return Err(Denied { caller: None, error: ApiError::AuditUnavailable, at: now });
        }
        let callers = &self.shared.state.callers;
        let (authorized, class) = match guard.identity {
            Identity::Public => (None, if stream { Class::PublicStream } else { Class::Public }),
            // Only a POST is a signed call: the rest goes to the router's 405 as a public request.
            Identity::SigV4 if request.method() != Method::POST => (None, Class::Public),
            Identity::SigV4 => {
                // What the head shows is checked before a place is taken; the signature, which
                // covers the body, by the endpoint.
                let signed = SignedRequest::of(request.method(), request.uri(), request.headers());
                callers.check_signed_head(&signed, std::time::SystemTime::now())?;
                (None, Class::Signed)
            }
            Identity::Caller | Identity::VaultToken => {
                // The key as the row's identity reads it (Vault's token first on Vault's rows).
                let key = guard.identity.key(request.headers());
                let client = request.extensions().get::<Arc<ClientIdentity>>().map(|c| &**c);
                // With auth on, a request without credentials is admitted only as `anonymous` on
                // a route open to it (`[pollen] anonymous`): as unauthenticated as a public one,
                // it takes a place of its own kind. (Auth is fixed for the process.)
                let open = self.shared.state.settings.auth.enabled && key.is_none() && client.is_none();
                (
                    Some(callers.authorize(key, client, guard.route, now)?),
                    if open { Class::Open } else { Class::Caller },
                )
            }
        };
        let (caller, at) = authorized.as_ref().map_or((None, now), |a| (Some(a.caller.clone()), a.at));
        let deny = |error| Denied { caller: caller.clone(), error, at };
        let peer = request.extensions().get::<Arc<Peer>>();
        let cap = match class {
            Class::Caller => &self.shared.cap,
            // Its proof is in its body: it takes no place that verified callers share, only its
            // connection's one place for a signed body (so it holds at most that body's bytes,
            // and an attacker who names a real key id from the real caller's address shuts out
            // no one but itself). The endpoint then admits the caller the signature names.
            Class::Signed => {
                let signed = peer.and_then(Peer::signed).ok_or_else(|| deny(ApiError::Overloaded))?;
                return Ok((Slot { _signed: Some(signed), ..Slot::default() }, None, class));
            }
            Class::Public => &self.shared.public_cap,
            Class::Open => &self.shared.open_cap,
            Class::PublicStream => &self.shared.public_stream_cap,
        };
        // Without credentials, a peer takes at most its share before any shared place.
        let peer_place = match class {
            Class::Caller | Class::Signed => None,
            Class::Public | Class::Open | Class::PublicStream => {
                let addr =
                    client_addr(peer.and_then(|p| p.addr), request.headers(), &self.shared.trusted_proxies);
                let key =
                    if class == Class::PublicStream { PeerKey::streams_of(addr) } else { PeerKey::of(addr) };
                Some(self.shared.peers.enter(key, now).map_err(deny)?)
            }
        };
        let Some(place) = cap.enter() else {
            return Err(deny(ApiError::Overloaded));
        };
        let admission = authorized.map(Authorized::enter).transpose()?;
        Ok((Slot { _cap: Some(place), _peer: peer_place, _signed: None }, admission, class))
    }
}

/// The cap a request's place is under, which also says how its body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// A caller named by its credentials: the server's cap, the configured body deadline.
    Caller,
    /// A public route: the public cap, the place given back with the body, which is due
    /// within [`PUBLIC_BODY_TIMEOUT`].
    Public,
    /// `anonymous` without credentials on a route open to it (`[pollen] anonymous`): as
    /// `Public`, under a cap of its own (health checks keep theirs).
    Open,
    /// A signed request before its signature is checked: its connection's one place for a
    /// signed body, no shared one; the place goes with the body, due within
    /// [`PUBLIC_BODY_TIMEOUT`].
    Signed,
    /// A public stream: its own cap, held for the stream's lifetime.
    PublicStream,
}

impl<S, B> Service<Request<B>> for Front<S>
where
    S: Service<Request<ReadDeadline<B>>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = FrontFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let id = match request.headers().get(X_REQUEST_ID) {
            Some(id) => id.clone(),
            None => self.shared.state.request_ids.next_value(),
        };
        let mut observe = Observe::start(&self.shared.state, &request, id);
        let span = observe.span.clone();
        let _in_request = span.enter();
        let start = observe.start;
        let endpoint = Endpoint::at(observe.route_index);
        let guard = match (endpoint, observe.grpc_method) {
            (Some(endpoint), _) => endpoint.guard(),
            (None, Some((_, guard))) => guard,
            (None, None) => Guard::PUBLIC,
        };
        observe.public = guard.identity == Identity::Public;
        let stream = observe.public && public_stream(request.uri().path());
        // A timeout too large to add is none at all (a year is as good as for ever here).
        let deadline = (start.checked_add(self.shared.timeout))
            .unwrap_or_else(|| start + Duration::from_secs(365 * 86_400));
        let direct = endpoint.filter(|e| {
            self.shared.direct && request.method() == Method::GET && e.serves_get() && e.answers_at_once()
        });
        let admitted = tracing::info_span!(target: crate::telemetry::trace::TRACE_TARGET, "admission")
            .in_scope(|| self.admit(&request, guard, stream, start));
        let (inner, slot, admission) = match admitted {
            // Refused at once, never queued: nothing below runs, no body is read.
            Err(denied) => (Inner::Refused { denied: Some(denied) }, None, None),
            // Answered on the first poll, without the router (a GET's body, if any, is not
            // read). Not here: HTTP/2 calls the service on the connection's task and spawns
            // only the future, and the connection must not wait for a request's work.
            Ok((slot, admission, class)) => match direct {
                Some(endpoint) => {
                    let (parts, _body) = request.into_parts();
                    (Inner::Direct { endpoint, parts: Some(parts) }, Some(slot), admission)
                }
                None => {
                    if let Some(admission) = &admission {
                        request.extensions_mut().insert(admission.clone());
                    }
                    // The beacon bounds each peer's requests waiting for a round by this key.
                    let waiting = endpoint.is_some_and(|e| e.limits() == Limits::PeerWaiting);
                    if let Some(key) = slot.peer_key().filter(|_| waiting) {
                        request.extensions_mut().insert(key);
                    }
                    // gRPC reads the id from the metadata for its records; REST handlers never
                    // do, and the request's header map would grow for it.
                    if observe.grpc() {
                        request.headers_mut().insert(X_REQUEST_ID, observe.id.clone());
                    }
                    // A public request's place goes with its body (see PUBLIC_CONCURRENCY); a
                    // public stream's with its response, for its lifetime (PUBLIC_STREAMS).
                    let (body_timeout, slot, body_slot) = match class {
                        Class::Caller => (self.shared.body_timeout, Some(slot), None),
                        Class::Public | Class::Open | Class::Signed => {
                            (self.shared.body_timeout.min(PUBLIC_BODY_TIMEOUT), None, Some(slot))
                        }
                        Class::PublicStream => (self.shared.stream_lifetime, Some(slot), None),
                    };
                    let body_deadline = start.checked_add(body_timeout).unwrap_or(deadline);
                    let request = request.map(|body| ReadDeadline::new(body, body_deadline, body_slot));
                    let inner = match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
                        Ok(future) => Inner::Called { future: Box::pin(future) },
                        Err(_) => Inner::Refused { denied: Some(unnamed(panicked(), start)) },
                    };
                    (inner, slot, admission)
                }
            },
        };
        if let Some(admission) = &admission {
            observe.caller = Some(admission.caller.clone());
        }
        let lifetime = stream.then(|| start.checked_add(self.shared.stream_lifetime).unwrap_or(deadline));
        FrontFuture { inner, observe: Some(observe), slot, admission, deadline, timer: None, lifetime }
    }
}

pin_project! {
    /// The response future of [`Front`].
    pub struct FrontFuture<F> {
        #[pin]
        inner: Inner<F>,
        observe: Option<Observe>,
        slot: Option<Slot>,
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
        Direct { endpoint: Endpoint, parts: Option<Parts> },
        Refused { denied: Option<Denied> },
    }
}

impl<F> Future for FrontFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let span = this.observe.as_ref().map(|o| o.span.clone()).unwrap_or_else(tracing::Span::none);
        let _in_request = span.enter();
        let dialect = this.observe.as_ref().map_or(Dialect::Rest, |o| o.dialect);
        // An answer of this layer's own (refused, shed, timed out, a panic below), or the
        // service's; an endpoint's comes with its outcome, the router's in its extensions.
        let (mut response, own, outcome) = match this.inner.as_mut().project() {
            InnerProj::Called { future } => match poll_called(future, *this.deadline, &mut *this.timer, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Called::Answered(mut response)) => {
                    let outcome = response.extensions_mut().remove::<Record>().unwrap_or_default();
                    (response, false, outcome)
                }
                Poll::Ready(Called::Panicked) => own_answer(panicked(), dialect),
                Poll::Ready(Called::Expired(error)) => {
                    // Out of time: the handler's future is dropped here, and with it whatever
                    // it held (a body read, a clone of the admission).
                    this.inner.set(Inner::Refused { denied: None });
                    own_answer(error, dialect)
                }
            },
            InnerProj::Direct { endpoint, parts } => {
                let state = this.observe.as_ref().map(|o| &o.state);
                answer_directly(*endpoint, parts.take(), state, this.admission.as_ref(), dialect)
            }
            InnerProj::Refused { denied } => refused(denied.take(), this.observe.as_mut(), dialect),
        };
        // The headers are ready: the places under the cap and in the caller's count are free
        // for the next request (a streamed body holds its own clone of the admission), but
        // for a public stream's, which its body holds to its end.
        let slot = this.slot.take();
        if let (Some(end), false) = (*this.lifetime, own) {
            response = response.map(|body| axum::body::Body::new(Lifetime::new(body, end, slot)));
        }
        let admitted_at = this.admission.take().map(|a| a.at);
        let response = match this.observe.take() {
            Some(observe) => record(observe, response, own, outcome, admitted_at),
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

/// Step 5 for an endpoint called directly: its answer, a panic in it answered 500.
fn answer_directly(
    endpoint: Endpoint,
    parts: Option<Parts>,
    state: Option<&AppState>,
    admission: Option<&Admission>,
    dialect: Dialect,
) -> (Response, bool, Record) {
    let (Some(parts), Some(state)) = (parts, state) else {
        // Polled again after its end (a contract breach): an error, not a panic.
        return own_answer(ApiError::Internal, dialect);
    };
    match catch_unwind(AssertUnwindSafe(|| endpoint.answer(state, admission, &parts))) {
        Ok(RecordedResponse { response, record }) => (response, false, record),
        Err(_) => own_answer(panicked(), dialect),
    }
}

/// A refusal of steps 2 to 4, answered; the caller it names goes to the records.
fn refused(
    denied: Option<Denied>,
    observe: Option<&mut Observe>,
    dialect: Dialect,
) -> (Response, bool, Record) {
    let Some(Denied { caller, error, at }) = denied else {
        return own_answer(ApiError::Internal, dialect);
    };
    let answer = own_answer(error, dialect);
    if let (Some(caller), Some(observe)) = (caller, observe) {
        observe.caller = Some(caller);
        observe.caller_at = at;
    }
    answer
}

/// Step 6, once the headers are ready: the records (metrics, the access and audit lines) and
/// the front layer's headers (the caller's rate-limit fields, `Cache-Control`, the request id,
/// `traceresponse`). `own`: an answer of the front layer's own.
fn record(
    mut observe: Observe,
    mut response: Response,
    own: bool,
    outcome: Record,
    mut admitted_at: Option<Instant>,
) -> Response {
    if let Some((caller, at)) = &outcome.named {
        observe.caller = Some(caller.clone());
        admitted_at = Some(*at);
    }
    if let Some(caller) = &observe.caller {
        rate_limit_fields(&mut response, caller, admitted_at.unwrap_or(observe.caller_at));
    }
    // A panic while recording (it would be a bug of ours) costs the line, not the response.
    if catch_unwind(AssertUnwindSafe(|| observe.finish(&response, &outcome, own))).is_err() {
        tracing::error!("panic while recording a response");
    }
    let headers = response.headers_mut();
    // Random output must never be cached by any proxy: on every response, errors included,
    // but the beacon's rounds and chain info, public and the same for everyone, which say
    // how long they keep (see `Record::cache_control`).
    match outcome.cache_control {
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

/// A refusal that names no caller.
fn unnamed(error: ApiError, at: Instant) -> Denied {
    Denied { caller: None, error, at }
}

/// An answer of the front layer's own: problem+json, for a gRPC call its status (so a client
/// sees `UNAUTHENTICATED`, `RESOURCE_EXHAUSTED` or `DEADLINE_EXCEEDED` with `retry-after`, not
/// an HTTP status it cannot read), on a drop-in front-end's route the error as its service
/// writes it; with the error's code for the records.
fn own_answer(error: ApiError, dialect: Dialect) -> (Response, bool, Record) {
    let outcome = Record { code: Some(error.code()), ..Record::default() };
    (dialect.render(&error), true, outcome)
}

/// `RateLimit-Policy` and `RateLimit` (as of `at`, the admission decision) for a caller with a
/// rate quota: HTTP headers, or a gRPC call's initial (or trailers-only) metadata.
fn rate_limit_fields(response: &mut Response, caller: &Caller, at: Instant) {
    if let Some(policy) = &caller.policy_field {
        let headers = response.headers_mut();
        headers.insert(HeaderName::from_static(RATELIMIT_POLICY), policy.clone());
        if let Some(now) = current_field(caller, at) {
            headers.insert(HeaderName::from_static(RATELIMIT), now);
        }
    }
}

/// The error of a panic below: logged (without its message, which could hold anything) and
/// answered as a 500.
fn panicked() -> ApiError {
    tracing::error!("panic while serving a request; answered 500");
    ApiError::Internal
}

/// One request being observed. Dropped before it finishes (the client went away before the
/// response was ready), it still leaves its access line (status 499, gRPC `CANCELLED`) and
/// the in-flight gauge as it found it.
struct Observe {
    state: AppState,
    /// The index of the route template in [`ROUTES`] ([`UNMATCHED`] for none).
    route_index: usize,
    /// A gRPC method of the randomness service: its name and guard.
    grpc_method: Option<(&'static str, Guard)>,
    /// The route's label in the access line: a REST route template, a gRPC method of the
    /// randomness service, `grpc.health`, `grpc.reflection`, or `unmatched`.
    label: &'static str,
    /// How the front layer's own answers are written: [`Dialect::Grpc`] for a gRPC call (by
    /// its content type, on no REST route), which is also observed per method.
    dialect: Dialect,
    method: Method,
    start: Clock,
    /// The request id, echoed on the response.
    id: HeaderValue,
    /// The caller, once named (admitted, or refused by name).
    caller: Option<Arc<Caller>>,
    /// When a refused caller was refused (its rate-limit fields are as of then).
    caller_at: Instant,
    /// A public route: no caller is named in its lines, refused or not.
    public: bool,
    /// Recorded: nothing left for the drop.
    done: bool,
    /// The request's OpenTelemetry server span (disabled with traces off), ended with this.
    span: tracing::Span,
}

impl Observe {
    /// A gRPC call: answered with gRPC statuses, observed per method.
    fn grpc(&self) -> bool {
        self.dialect == Dialect::Grpc
    }

    /// Starts observing. A gRPC call is decided by the path as well as the content type, so
    /// a REST request that claims `application/grpc` is still answered as REST, and a call of
    /// a gRPC method (which tonic serves whatever the content type) is answered as gRPC.
    fn start<B>(state: &AppState, request: &Request<B>, id: HeaderValue) -> Observe {
        let path = request.uri().path();
        // A route the configuration does not serve is none at all.
        let endpoint = Endpoint::of_path(path).filter(|e| e.enabled(state));
        let route_index = endpoint.map_or(UNMATCHED, |e| e as usize);
        let grpc_method = if route_index == UNMATCHED { grpc_guard(path) } else { None };
        let grpc = route_index == UNMATCHED
            && (grpc_method.is_some()
                || request
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc")));
        let dialect = match endpoint {
            Some(e) => e.dialect(),
            None if grpc => Dialect::Grpc,
            None => Dialect::Rest,
        };
        let label = match (ROUTES.get(route_index), grpc_method) {
            (Some(route), _) => route,
            (None, Some((name, _))) => name,
            (None, None) if path.starts_with("/grpc.health.") => "grpc.health",
            (None, None) if path.starts_with("/grpc.reflection.") => "grpc.reflection",
            (None, None) => "unmatched",
        };
        if !grpc {
            state.metrics.in_flight.inc();
        }
        let method = request.method().clone();
        let start = Clock::now();
        let (caller, caller_at, public, done) = (None, start, false, false);
        // A bounded name (never the request's own path): the route template, a method of the
        // randomness service by its full name, or the label of the rest.
        let span_name = || match grpc_method {
            Some((name, _)) => format!("{}{name}", &GRPC_SERVICE_PREFIX[1..]).into(),
            None => std::borrow::Cow::Borrowed(label),
        };
        let span = crate::telemetry::trace::server_span(request.headers(), span_name, method.as_str(), grpc);
        Observe {
            state: state.clone(),
            route_index,
            grpc_method,
            label,
            dialect,
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
    fn finish(&mut self, response: &Response, outcome: &Record, own: bool) {
        self.done = true;
        let metrics = &self.state.metrics;
        let served = outcome.served;
        let alg = served.map_or("none", |s| s.alg.name());
        let elapsed = self.start.elapsed();
        let (status, code) = if self.grpc() {
            let status = grpc_status(response);
            let code = outcome.code.or_else(|| grpc_error_code(response, status));
            (status, code)
        } else {
            (response.status().as_u16(), outcome.code)
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
                self.route_index,
                served.map(|s| s.alg),
                response.status(),
                elapsed.as_secs_f64(),
            );
        }
        if !outcome.recorded_at_end {
            let (n, code, serial) =
                (served.map_or(0, |s| s.n_bits), code.unwrap_or(""), outcome.serial.as_deref().unwrap_or(""));
            self.line(alg, n, status, code, serial, elapsed);
        }
    }

    /// The access line and, with `log.audit`, the audit line (with the serial of the receipt
    /// served, if any).
    fn line(
        &self,
        alg: &'static str,
        n: u64,
        status: u16,
        code: &'static str,
        serial: &str,
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
            access.audit(if self.grpc() { "grpc" } else { "http" }).with_serial(serial).log();
        }
    }
}

impl Drop for Observe {
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
                self.state.metrics.observe_http(self.route_index, None, error.status(), seconds);
            }
            self.line("none", 0, status, code, "", self.start.elapsed());
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
const UNMATCHED: usize = ROUTES.len();
