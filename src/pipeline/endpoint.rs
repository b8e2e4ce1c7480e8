//! An endpoint of the API port as plain data: one [`Endpoint`] per row of the table the HTTP
//! layer writes (`http.rs`, `ENDPOINTS`), each column a type of this module, so that every
//! function a row names is imported where the table is written (and seen by the layer check),
//! and the pipeline reads the rows without calling back into the layer above. What the table
//! is to the pipeline ([`Endpoints`]): the row of a request's path (as the router matches it),
//! the row listing a gRPC method, whether the configuration serves a row. What the pipeline
//! hands over to a row, once: its handler ([`Endpoint::answer`] for a GET answered at once; the
//! router's method router otherwise).

use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, Uri, header};
use axum::response::Response;
use axum::routing::MethodRouter;
use utoipa::openapi::{Components, PathItem};

use super::params::{Accept, Param, Params};
use super::report::Answer;
use crate::callers::{Admission, Callers, Denied, Key};
use crate::error::ApiError;
use crate::route::Route;
use crate::service::Rules;
use crate::state::AppState;

/// One endpoint: a row of the table (`http.rs`). Every column is a value; nothing about an
/// endpoint is written anywhere else but its handler and its OpenAPI operation, which the row
/// names.
pub struct Endpoint {
    /// The metric and log label: the path template (parameters in braces), or a name where the
    /// path is everyone's (`kms`: KMS's path is `/`). The first row of a policy route carries
    /// its name ([`Route::name`]).
    pub label: &'static str,
    /// The router's templates, the documented one first.
    pub paths: &'static [&'static str],
    /// The methods it answers.
    pub methods: &'static [Verb],
    /// Who may call it.
    pub guard: Guard,
    /// What its requests take of the caps and quotas.
    pub charge: Charge,
    /// When the configuration serves it.
    pub availability: Availability,
    /// How the pipeline's own answers on it are written (as the service a drop-in front-end
    /// stands in for writes its errors, so that its clients read them).
    pub errors: Render,
    /// What answers it.
    pub handler: Handler,
    /// The gRPC methods of `drbgd.v1.RandomnessService` serving the same thing, under its guard.
    pub grpc: &'static [&'static str],
    /// Whether it can answer a signed receipt (`receipt=true`).
    pub receipt: bool,
    /// Its entry in the OpenAPI document, written beside its handler.
    pub doc: Doc,
}

/// An HTTP method an endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `GET`.
    Get,
    /// `HEAD`: a GET without its body (the router answers it with every GET).
    Head,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
}

/// The methods of a random-output endpoint: a GET's query or a POST's JSON body.
pub const GET_POST: &[Verb] = &[Verb::Get, Verb::Head, Verb::Post];
/// The methods of a metadata or public GET.
pub const GET: &[Verb] = &[Verb::Get, Verb::Head];

/// Who may call an endpoint or a gRPC method: how the caller's credentials are read from the
/// head, and the policy route the caller's policy must allow (none: any admitted caller, or,
/// public, no caller at all).
#[derive(Clone, Copy)]
pub struct Guard {
    /// How the caller is named.
    pub credentials: Credentials,
    /// The policy route.
    pub route: Option<Route>,
}

impl Guard {
    /// Anyone, unadmitted: the public endpoints, and what no endpoint guards (the router's 404,
    /// gRPC health and reflection).
    pub const PUBLIC: Guard = Guard { credentials: Credentials::Public, route: None };
    /// Any caller named by a bearer key or a client certificate: the metadata.
    pub const METADATA: Guard = Guard { credentials: Credentials::Bearer, route: None };

    /// A caller named by a bearer key or a client certificate whose policy allows `route`.
    pub const fn bearer(route: Route) -> Guard {
        Guard { credentials: Credentials::Bearer, route: Some(route) }
    }

    /// Whether it names no caller at all.
    pub fn public(self) -> bool {
        matches!(self.credentials, Credentials::Public)
    }
}

/// How a request names its caller, from its head.
#[derive(Clone, Copy)]
pub enum Credentials {
    /// No caller at all: anyone, under the public cap and each peer's share of it.
    Public,
    /// A bearer key (`Authorization`; gRPC's `authorization` metadata is the same header) or a
    /// client certificate; with neither, the caller `anonymous` (with auth off, or on a route
    /// open to it).
    Bearer,
    /// As [`Credentials::Bearer`], the key read by a front-end's own function first (Vault's
    /// token header).
    Key(ReadKey),
    /// A signature over the body: what the head shows is checked by the front-end's function
    /// before a place is taken, and the endpoint admits the caller the signature names once the
    /// body is read. Only a POST is a signed call.
    Signature(CheckHead),
}

impl Credentials {
    /// The key the head presents, as this way of naming a caller reads it (`None`: none, or
    /// none read from the head).
    pub fn key(self, headers: &HeaderMap) -> Option<Key<'_>> {
        match self {
            Credentials::Bearer => bearer(headers),
            Credentials::Key(read) => read(headers),
            Credentials::Public | Credentials::Signature(_) => None,
        }
    }
}

/// The `Authorization` header's value, as a bearer key.
pub fn bearer(headers: &HeaderMap) -> Option<Key<'_>> {
    headers.get(header::AUTHORIZATION).map(|v| Key::Bearer(v.as_bytes()))
}

/// Reads the key a request's head presents (a front-end's way: Vault's token).
pub type ReadKey = fn(&HeaderMap) -> Option<Key<'_>>;

/// Checks what the head of a signed request shows (a front-end's way: AWS SigV4's key, scope
/// and date), refusing it as `unknown` before its body is read.
pub type CheckHead = fn(&Callers, &Method, &Uri, &HeaderMap) -> Result<(), Denied>;

/// Writes an error as a route's clients read it.
pub type Render = fn(&ApiError) -> Response;

/// What an endpoint's requests take of the server's caps and the caller's quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charge {
    /// The caller's quota under the server's cap: an in-flight place, and a request token on a
    /// policy route (none on metadata). A signed request holds only its connection's place for
    /// a signed body until its signature is checked.
    Quota,
    /// No caller: the public cap and the peer's share of it (`[server] peer_*`).
    Peer,
    /// As [`Charge::Peer`], and the handler bounds each peer's requests waiting (for the
    /// beacon's next round): the pipeline hands it the peer's key.
    PeerWaiting,
}

/// When the configuration serves an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// Always.
    Always,
    /// With its policy route's drop-in section enabled (`[pollen]`, `[vault]`, `[kms]`).
    Section,
    /// With `[beacon] enabled`.
    Beacon,
    /// With `[tickets] enabled`.
    Tickets,
    /// With the drop-in section of this route enabled: a public row of a drop-in (the RANDOM.ORG
    /// door's public key).
    Door(Route),
}

/// A random-output handler: the parameters (a GET's query or a POST's JSON body) of an
/// admitted caller, `accept` choosing the encoding where the parameters do not.
pub type RandomFn = fn(&AppState, &Admission, Accept<'_>, &Params<'_>) -> Result<Answer, ApiError>;

/// What answers an endpoint.
#[derive(Clone, Copy)]
pub enum Handler {
    /// Random output: a GET's query or a POST's JSON body (the same parameters), answered at
    /// once.
    Random(RandomFn),
    /// A GET answered at once from the state.
    State(fn(&AppState) -> Response),
    /// A GET answered at once for its caller.
    Caller(fn(&Admission) -> Response),
    /// A method router of its own: handlers that read a body or wait.
    Router(fn() -> MethodRouter<AppState>),
}

/// An endpoint's entry in the OpenAPI document: its path item, each method's operation,
/// described for one configuration; the component schemas it names beyond the shared ones go
/// into the components. Written beside the endpoint's handler; the pieces it is built from are
/// `http/openapi/describe.rs`'s.
pub type Doc = fn(&Describe<'_>, &mut Components) -> PathItem;

/// What an endpoint's OpenAPI operation is described for: the configuration's limits, and what
/// the document shows of this endpoint under it.
pub struct Describe<'a> {
    /// The service's limits and algorithms.
    pub rules: &'a Rules,
    /// The bearer scheme and its 401 on the operations (auth on, and an endpoint whose caller
    /// is named by a bearer key).
    pub auth: bool,
    /// With receipts served, on an endpoint that can answer one: the most output bytes one
    /// covers.
    pub receipts: Option<u64>,
    /// With tickets served, on an endpoint whose draws may use one: its POST body's `ticket`.
    pub tickets: bool,
}

impl Endpoint {
    /// Whether it answers GET (and HEAD): all but `/verify` and the drop-in front-ends', which
    /// the router answers 405 with `Allow`.
    pub fn serves_get(&self) -> bool {
        self.methods.contains(&Verb::Get)
    }

    /// Whether [`Endpoint::answer`] serves its GET without waiting, so that the pipeline may
    /// call it directly: all but those with a method router of their own.
    pub fn answers_at_once(&self) -> bool {
        !matches!(self.handler, Handler::Router(_))
    }

    /// Whether the configuration serves it (the drop-in front-ends and the beacon are off by
    /// default).
    pub fn enabled(&self, state: &AppState) -> bool {
        match self.availability {
            Availability::Always => true,
            Availability::Section => self.guard.route.is_some_and(|route| state.settings.serves(route)),
            Availability::Beacon => state.beacon.is_some(),
            Availability::Tickets => state.tickets.is_some(),
            Availability::Door(route) => state.settings.serves(route),
        }
    }

    /// The response to a GET of this endpoint (errors as problem+json), for a caller admitted
    /// as its guard says (`None` only on a public endpoint). Only for the endpoints that
    /// [answer at once](Endpoint::answers_at_once): the pipeline's one hand-over to the
    /// endpoint, and the router's GET of it.
    pub fn answer(&self, state: &AppState, admission: Option<&Admission>, parts: &Parts) -> Answer {
        // The pipeline admits before it calls; a guarded endpoint reached without an admission
        // is a wiring fault, never served.
        if !self.guard.public() && admission.is_none() {
            return ApiError::Internal.into();
        }
        match (self.handler, admission) {
            (Handler::State(of_state), _) => of_state(state).into(),
            (Handler::Caller(of_caller), Some(admission)) => of_caller(admission).into(),
            (Handler::Random(respond), Some(admission)) => {
                random_get(respond, self.receipt, state, admission, parts)
            }
            // A caller's handler on a public row (the table's test refuses one), or a method
            // router, which the pipeline never calls here.
            (Handler::Caller(_) | Handler::Random(_), None) | (Handler::Router(_), _) => {
                ApiError::Internal.into()
            }
        }
    }
}

/// A GET of a random-output endpoint: its parameters from the query string.
fn random_get(
    respond: RandomFn,
    receipt: bool,
    state: &AppState,
    admission: &Admission,
    parts: &Parts,
) -> Answer {
    let answer = Params::of(parts).and_then(|params| {
        // HEAD leaves out the body: a receipt would be signed and audited unseen.
        if receipt && parts.method == Method::HEAD && params.flag(Param::Receipt)? {
            return Err(ApiError::invalid(
                "receipt_on_head",
                "receipt",
                "a receipt is in the body, which HEAD leaves out: ask with GET",
            ));
        }
        respond(state, admission, Accept::of(&parts.headers), &params)
    });
    answer.unwrap_or_else(Answer::from)
}

/// The table as the pipeline reads it from a request's head: the row of a path, exactly as the
/// router matches the rows' templates, and the row listing a gRPC method.
pub struct Endpoints {
    rows: &'static [Endpoint],
    /// The rows' templates in `matchit`, the matcher axum's router runs (Cargo.toml pins the
    /// version axum pins, and CI checks the build holds one), so that the guard chosen for a
    /// path is the guard of the handler the router then calls, whatever the path: empty
    /// segments, precedence of static segments, trailing slashes.
    matcher: matchit::Router<usize>,
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoints").field("rows", &self.rows.len()).finish_non_exhaustive()
    }
}

/// The path prefix of the randomness service's methods.
pub const GRPC_SERVICE_PREFIX: &str = "/drbgd.v1.RandomnessService/";

/// Most rows a table may have: the metrics keep a handle per (row, algorithm) for 200s.
pub const MAX_ENDPOINTS: usize = crate::metrics::MAX_ROUTE_LABELS;

impl Endpoints {
    /// The table `rows`, its templates matched as the router matches them.
    ///
    /// # Errors
    /// A template that conflicts with another's (the router would refuse it too), or more than
    /// [`MAX_ENDPOINTS`] rows.
    pub fn new(rows: &'static [Endpoint]) -> Result<Endpoints, String> {
        if rows.len() > MAX_ENDPOINTS {
            return Err(format!("{} endpoints; at most {MAX_ENDPOINTS}", rows.len()));
        }
        let mut matcher = matchit::Router::new();
        for (i, row) in rows.iter().enumerate() {
            for template in row.paths {
                matcher.insert(*template, i).map_err(|e| format!("{template}: {e}"))?;
            }
        }
        Ok(Endpoints { rows, matcher })
    }

    /// The rows, in the table's order.
    pub fn rows(&self) -> &'static [Endpoint] {
        self.rows
    }

    /// The row at `index` (a row's index is its label's in the metrics).
    pub fn at(&self, index: usize) -> Option<&'static Endpoint> {
        self.rows.get(index)
    }

    /// The index of the row a path is for, if any: an exact label first (most requests), else
    /// the router's own matcher.
    pub fn of_path(&self, path: &str) -> Option<usize> {
        if let Some(i) = self.rows.iter().position(|row| row.label == path) {
            return Some(i);
        }
        self.matcher.at(path).ok().map(|found| *found.value)
    }

    /// The index of the row a request's path is for, if the configuration serves it (a route
    /// it does not serve is none at all).
    pub fn served(&self, path: &str, state: &AppState) -> Option<usize> {
        self.of_path(path).filter(|&i| self.rows[i].enabled(state))
    }

    /// The method of the randomness service a gRPC path calls: its name (the metrics label)
    /// and the guard of the row that lists it. `None` for a path that is no such method
    /// (health, reflection, a method it does not have: public, tonic answers them without a
    /// caller).
    pub fn grpc_method(&self, path: &str) -> Option<(&'static str, Guard)> {
        let method = path.strip_prefix(GRPC_SERVICE_PREFIX)?;
        self.rows.iter().find_map(|row| {
            let name: &'static str = row.grpc.iter().copied().find(|name| *name == method)?;
            Some((name, row.guard))
        })
    }
}
