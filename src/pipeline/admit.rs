//! Steps 2 to 4 of the pipeline, from the request's head: the caller named and authorized as
//! its route's gate says, a place under the server's cap (or a cap of its own: public requests,
//! `anonymous` on an open route, public streams, signed bodies), each peer's share for requests
//! without credentials, then the caller's quota. Refused at once, never queued. What a request
//! holds while it is in progress ([`Places`]) is given back when dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::{Method, Request};
use tokio::time::Instant;

use super::endpoint::{Credentials, Guard};
use crate::callers::peer::{Peer, PeerKey, PeerLimits, PeerPlace, PeerTable, SignedPlace, client_addr};
use crate::callers::registry::ANONYMOUS;
use crate::callers::{Admission, Authorized, ClientIdentity, Denied};
use crate::config::ServerSettings;
use crate::error::ApiError;
use crate::state::AppState;

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

/// The public gRPC methods whose calls are streams meant to stay open: they get a cap
/// ([`PUBLIC_STREAMS`]) and a lifetime ([`PUBLIC_STREAM_LIFETIME`]) of their own.
const PUBLIC_STREAM_METHODS: [&str; 3] = [
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// Whether `path` is a public gRPC streaming method (health `Watch`, reflection).
pub(super) fn public_stream(path: &str) -> bool {
    PUBLIC_STREAM_METHODS.contains(&path)
}

/// The caps and per-peer limits every request is admitted under, shared by every clone of the
/// pipeline.
#[derive(Debug)]
pub(super) struct Caps {
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
}

impl Caps {
    /// The caps (`server.concurrency_limit`, and the smaller ones of their own) and per-peer
    /// limits (`server.peer_*`) as configured.
    pub(super) fn new(server: &ServerSettings) -> Caps {
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
        Caps {
            cap: cap(limit),
            public_cap: cap(limit.min(PUBLIC_CONCURRENCY)),
            public_stream_cap: cap(limit.min(PUBLIC_STREAMS)),
            open_cap: cap(limit.min(OPEN_CONCURRENCY)),
            peers,
            trusted_proxies,
        }
    }

    /// Steps 2 to 4 of the pipeline: the caller authorized from the head, a place under the
    /// cap, the caller's quota. `None` admission: a public route, under its own cap. Also the
    /// kind of the place taken, which says how the body is read.
    pub(super) fn admit<B>(
        &self,
        state: &AppState,
        request: &Request<B>,
        guard: Guard,
        stream: bool,
        now: Instant,
    ) -> Result<(Places, Option<Admission>, PlaceKind), Denied> {
        // Nothing is served that could not be audited: while the log is backlogged every
        // request is refused first, before its credentials are read, so that no refusal adds
        // an audit line either (the backlog cannot be grown by requests that are not served).
        if crate::telemetry::audit_unavailable(state.settings.log.audit) {
            return Err(Denied { caller: None, error: ApiError::AuditUnavailable, at: now });
        }
        let callers = &state.callers;
        let (authorized, kind) = match guard.credentials {
            Credentials::Public => (None, if stream { PlaceKind::PublicStream } else { PlaceKind::Public }),
            // Only a POST is a signed call: the rest goes to the router's 405 as a public request.
            Credentials::Signature(_) if request.method() != Method::POST => (None, PlaceKind::Public),
            Credentials::Signature(check_head) => {
                // What the head shows is checked before a place is taken (as the row's front-end
                // reads it); the signature, which covers the body, by the endpoint.
                check_head(callers, request.method(), request.uri(), request.headers())?;
                (None, PlaceKind::Signed)
            }
            credentials @ (Credentials::Bearer | Credentials::Key(_)) => {
                // The key as the row's front-end reads it (Vault's token first on Vault's rows).
                let key = credentials.key(request.headers());
                let client = request.extensions().get::<Arc<ClientIdentity>>().map(|c| &**c);
                // With auth on, a request without credentials is admitted only as `anonymous` on
                // a route open to it (`[pollen] anonymous`): as unauthenticated as a public one,
                // it takes a place of its own kind. (Auth is fixed for the process.)
                let open = state.settings.auth.enabled && key.is_none() && client.is_none();
                (
                    Some(callers.authorize(key, client, guard.route, now)?),
                    if open { PlaceKind::Open } else { PlaceKind::Caller },
                )
            }
        };
        let (caller, at) = authorized.as_ref().map_or((None, now), |a| (Some(a.caller.clone()), a.at));
        let deny = |error| Denied { caller: caller.clone(), error, at };
        let peer = request.extensions().get::<Arc<Peer>>();
        let cap = match kind {
            PlaceKind::Caller => &self.cap,
            // Its proof is in its body: it takes no place that verified callers share, only its
            // connection's one place for a signed body (so it holds at most that body's bytes,
            // and an attacker who names a real key id from the real caller's address shuts out
            // no one but itself). The endpoint then admits the caller the signature names.
            PlaceKind::Signed => {
                let signed =
                    self.signed_places(peer, request.headers()).ok_or_else(|| deny(ApiError::Overloaded))?;
                return Ok((signed, None, kind));
            }
            PlaceKind::Public => &self.public_cap,
            PlaceKind::Open => &self.open_cap,
            PlaceKind::PublicStream => &self.public_stream_cap,
        };
        // Without credentials, a peer takes at most its share before any shared place.
        let peer_place = match kind {
            PlaceKind::Caller | PlaceKind::Signed => None,
            PlaceKind::Public | PlaceKind::Open | PlaceKind::PublicStream => {
                let addr = client_addr(peer.and_then(|p| p.addr), request.headers(), &self.trusted_proxies);
                let key = if kind == PlaceKind::PublicStream {
                    PeerKey::streams_of(addr)
                } else {
                    PeerKey::of(addr)
                };
                Some(self.peers.enter(key, now).map_err(deny)?)
            }
        };
        let Some(place) = cap.enter() else {
            return Err(deny(ApiError::Overloaded));
        };
        let admission = authorized.map(Authorized::enter).transpose()?;
        let admission = admission.map(|a| self.with_peer(a, request, peer_place.as_ref()));
        Ok((Places { _cap: Some(place), _peer: peer_place, ..Places::default() }, admission, kind))
    }

    /// A signed request's places: its connection's place for a signed body (`None` when they
    /// are taken), and its way to its peer's place ([`PeerGate`]).
    fn signed_places(&self, peer: Option<&Arc<Peer>>, headers: &axum::http::HeaderMap) -> Option<Places> {
        let signed = peer.and_then(Peer::signed)?;
        let addr = client_addr(peer.and_then(|p| p.addr), headers, &self.trusted_proxies);
        let gate = PeerGate { table: self.peers.clone(), key: PeerKey::of(addr) };
        Some(Places { _signed: Some(signed), gate: Some(gate), ..Places::default() })
    }

    /// `admission` with its peer when its caller is `anonymous` (every request with auth off),
    /// whose streams take their peer's share ([`Admission::peer`]): the peer of its place, else
    /// its client's address.
    fn with_peer<B>(
        &self,
        mut admission: Admission,
        request: &Request<B>,
        place: Option<&PeerPlace>,
    ) -> Admission {
        if admission.caller.name() == ANONYMOUS {
            admission.peer = Some(place.map_or_else(
                || {
                    let addr = request.extensions().get::<Arc<Peer>>().and_then(|p| p.addr);
                    PeerKey::of(client_addr(addr, request.headers(), &self.trusted_proxies))
                },
                PeerPlace::key,
            ));
        }
        admission
    }
}

/// The cap a request's place is under, which also says how its body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PlaceKind {
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

/// What one request holds while it is in progress (see [`PlaceKind`]): a place under a cap, its
/// peer's place, or its connection's one place for a signed body. Given back when dropped.
#[derive(Default)]
pub(super) struct Places {
    _cap: Option<CapPlace>,
    _peer: Option<PeerPlace>,
    _signed: Option<SignedPlace>,
    /// A signed request's way to its peer's place, handed to its endpoint.
    pub(super) gate: Option<PeerGate>,
}

/// A signed request's way to take its peer's place under the per-peer limits, as a request
/// without credentials takes one: for an endpoint whose body says that it names no caller
/// (RANDOM.ORG's `getTicket` and `verifySignature`), handed to it in the request's extensions.
#[derive(Debug, Clone)]
pub struct PeerGate {
    table: Arc<PeerTable>,
    key: PeerKey,
}

impl PeerGate {
    /// The peer's place, held until dropped.
    ///
    /// # Errors
    /// As [`PeerTable::enter`]: 429 over the peer's limits, 503 with the table full.
    pub fn enter(&self) -> Result<PeerPlace, ApiError> {
        self.table.enter(self.key, Instant::now())
    }
}

impl Places {
    /// The peer whose place it holds, if any (a request without credentials).
    pub(super) fn peer_key(&self) -> Option<PeerKey> {
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
