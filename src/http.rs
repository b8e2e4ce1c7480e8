//! The HTTP API: the table of its endpoints ([`ENDPOINTS`], one row each, plain data of the
//! pipeline's types) and the router built from it. Each row names its handler and its OpenAPI
//! operation, written side by side in the handler's module (`http/*`, grouped by resource).
//! Handlers translate between HTTP and [`crate::service`]; an endpoint that is not one of the
//! service's own operations holds its typed request and its draw beside them, over the
//! service's primitives, for its gRPC method too (`http/sequence.rs`). The router, the guards,
//! the call pipeline in front of the router ([`crate::pipeline`], which reads the rows) and the
//! OpenAPI document are derived from the rows. docs/extending.md walks through adding one.

mod beacon;
mod body;
mod credentials;
mod kms;
pub(crate) mod meta;
pub mod openapi;
mod pollen;
mod random;
mod randomorg;
mod receipt;
mod respond;
pub(crate) mod sequence;
pub mod tickets;
mod values;
mod vault;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, get};
use tower::Layer;

use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::params::{Accept, Param};
use crate::pipeline::{
    Answer, Availability, Charge, Credentials, Endpoint, Endpoints, GET, GET_POST, Guard, Handler, Pipeline,
    PipelineLayer, RandomFn, Verb,
};
use crate::route::Route;
use crate::state::AppState;

pub use respond::{TEXT, X_DRBG_ALG, X_DRBG_BITS, served, wiped, wiped_joined};

/// Vault's guard: its token header first, then a bearer key.
const VAULT: Guard =
    Guard { credentials: Credentials::Key(credentials::vault_token), route: Some(Route::Vault) };
/// KMS's guard: an AWS SigV4 signature, whose head is checked before the body is read.
const KMS: Guard =
    Guard { credentials: Credentials::Signature(credentials::sigv4_head), route: Some(Route::Kms) };
/// RANDOM.ORG's guard: the caller is named in the body (`apiKey`); the head must be JSON.
const RANDOM_ORG: Guard =
    Guard { credentials: Credentials::Signature(randomorg::json_head), route: Some(Route::RandomOrg) };
/// The beacon's routes' paths have a form under `/beacon/{chainhash}/` too.
const BEACON: Availability = Availability::Beacon;

/// Every endpoint of the API, one row each (see [`Endpoint`] for the columns). Random output:
/// GET with a query or POST with a JSON body, under the caller's quota, in problem+json.
pub static ENDPOINTS: &[Endpoint] = &[
    // `/bits`: n random bits, packed MSB-first.
    random_output(&["/bits"], Route::Bits, random::bits, random::doc::bits, &["GetBits", "StreamBits"]),
    // `/bytes`: n random bytes.
    random_output(&["/bytes"], Route::Bytes, random::bytes, random::doc::bytes, &["GetBytes"]),
    // `/token`: a token for sessions, API keys, CSRF.
    random_output(&["/token"], Route::Token, values::token, values::doc::token, &["GetToken"]),
    // `/nonce`: a nonce for an AEAD.
    random_output(&["/nonce"], Route::Nonce, values::nonce, values::doc::nonce, &["GetNonce"]),
    // `/uuid`: RFC 9562 UUIDs.
    random_output(&["/uuid"], Route::Uuid, values::uuid, values::doc::uuid, &["GetUuids"]),
    // `/int`: uniform integers in `[min, max]`.
    random_output(&["/int"], Route::Int, values::int, values::doc::int, &["GetInts"]),
    // `/sequence`: distinct integers of `[min, max]` in random order.
    random_output(&["/sequence"], Route::Sequence, sequence::answer, sequence::doc, &["GetSequence"]),
    // `POST /pollen`: the Pollen protocol's seed for a booting VM (with `[pollen] enabled`).
    Endpoint {
        availability: Availability::Section,
        ..row(
            &["/pollen"],
            &[Verb::Post],
            Guard::bearer(Route::Pollen),
            Handler::Router(pollen::router),
            pollen::doc::pollen,
        )
    },
    // `/v1/sys/tools/random[/…]`: Vault's random bytes, `POST` and `PUT` (with `[vault] enabled`).
    vault_route(
        &[vault::SYS_PATH, "/v1/sys/tools/random/{a}", "/v1/sys/tools/random/{a}/{b}"],
        vault::doc::vault_sys,
    ),
    // `/v1/transit/random[/…]`: Vault's other path to the same thing.
    vault_route(
        &[vault::TRANSIT_PATH, "/v1/transit/random/{a}", "/v1/transit/random/{a}/{b}"],
        vault::doc::vault_transit,
    ),
    // `POST /` with `X-Amz-Target`: AWS KMS `GenerateRandom` (with `[kms] enabled`).
    Endpoint {
        label: "kms",
        paths: &["/"],
        methods: &[Verb::Post],
        guard: KMS,
        charge: Charge::Quota,
        availability: Availability::Section,
        errors: kms::error_response,
        handler: Handler::Router(kms::router),
        grpc: &[],
        receipt: false,
        doc: kms::doc::kms,
    },
    // `POST /json-rpc/4/invoke`: RANDOM.ORG's JSON-RPC API, Release 4 (with `[randomorg] enabled`).
    Endpoint {
        label: randomorg::PATH,
        paths: &[randomorg::PATH],
        methods: &[Verb::Post],
        guard: RANDOM_ORG,
        charge: Charge::Quota,
        availability: Availability::Section,
        errors: randomorg::error_response,
        handler: Handler::Router(randomorg::router),
        grpc: &[],
        receipt: false,
        doc: randomorg::doc::invoke,
    },
    // `/json-rpc/4/public-key`: the key RANDOM.ORG-form signatures verify with (public).
    Endpoint {
        availability: Availability::Door(Route::RandomOrg),
        ..public(
            &["/json-rpc/4/public-key"],
            GET,
            Handler::State(randomorg::public_key),
            randomorg::doc::public_key,
        )
    },
    // `/algorithms`: the generators and their settings (metadata: any caller).
    metadata(&["/algorithms"], Handler::State(meta::algorithms), meta::doc::algorithms, &[]),
    // `/usage`: the calling caller's policy, quota and counters.
    metadata(&["/usage"], Handler::Caller(meta::usage), meta::doc::usage, &["GetUsage"]),
    // `/version`: the server's name and version.
    metadata(&["/version"], Handler::State(meta::version), meta::doc::version, &[]),
    // `/openapi.json`: the contract (public).
    public(&["/openapi.json"], GET, Handler::State(meta::openapi), meta::doc::openapi),
    // `/keys`: the receipts' verification keys, a JWKS (public: they hold no secret).
    public(&["/keys"], GET, Handler::State(receipt::keys), receipt::doc::keys),
    // `POST /verify`: checks a receipt (public).
    public(&["/verify"], &[Verb::Post], Handler::Router(receipt::verify_router), receipt::doc::verify),
    // Tickets (with `[tickets] enabled`): created, listed and revealed by their caller, a
    // ticketed draw's kept answer given back to it, a ticket shown to anyone.
    Endpoint {
        grpc: &["CreateTickets", "ListTickets"],
        ..tickets_route(
            &["/tickets"],
            &[Verb::Get, Verb::Head, Verb::Post],
            tickets::router,
            tickets::doc::tickets,
        )
    },
    Endpoint {
        guard: Guard::PUBLIC,
        charge: Charge::Peer,
        grpc: &["GetTicket"],
        ..tickets_route(&["/tickets/{id}"], GET, tickets::ticket_router, tickets::doc::ticket)
    },
    Endpoint {
        grpc: &["RevealTicket"],
        ..tickets_route(
            &["/tickets/{id}/reveal"],
            &[Verb::Post],
            tickets::reveal_router,
            tickets::doc::reveal,
        )
    },
    Endpoint {
        grpc: &["GetResult"],
        ..tickets_route(&["/results/{serial}"], GET, tickets::result_router, tickets::doc::result)
    },
    // The beacon (with `[beacon] enabled`): drand's HTTP API, public, each peer's requests
    // waiting for the next round bounded; each route but `/chains` also under
    // `/beacon/{chainhash}/`.
    beacon_route(&["/beacon/info", "/beacon/{chain}/info"], beacon::doc::info),
    beacon_route(&["/beacon/public/latest", "/beacon/{chain}/public/latest"], beacon::doc::latest),
    // A round once due (the next one is waited for).
    beacon_route(&["/beacon/public/{round}", "/beacon/{chain}/public/{round}"], beacon::doc::round),
    beacon_route(&["/beacon/chains"], beacon::doc::chains),
    // The round served and the round due.
    beacon_route(&["/beacon/health", "/beacon/{chain}/health"], beacon::doc::health),
];

/// A row at `paths` (its label the first): `methods` answered by `handler`, guarded by `guard`,
/// always served, under the caller's quota, errors as problem+json, no gRPC method, no receipt.
/// The rows below are this with what sets them apart.
const fn row(
    paths: &'static [&'static str],
    methods: &'static [Verb],
    guard: Guard,
    handler: Handler,
    doc: crate::pipeline::Doc,
) -> Endpoint {
    Endpoint {
        label: paths[0],
        paths,
        methods,
        guard,
        charge: Charge::Quota,
        availability: Availability::Always,
        errors: ApiError::render,
        handler,
        grpc: &[],
        receipt: false,
        doc,
    }
}

/// A random-output row: GET and POST, guarded by `route`, with a receipt on request.
const fn random_output(
    paths: &'static [&'static str],
    route: Route,
    handler: RandomFn,
    doc: crate::pipeline::Doc,
    grpc: &'static [&'static str],
) -> Endpoint {
    Endpoint {
        grpc,
        receipt: true,
        ..row(paths, GET_POST, Guard::bearer(route), Handler::Random(handler), doc)
    }
}

/// A metadata row: a GET for any admitted caller, under its quota but no policy route.
const fn metadata(
    paths: &'static [&'static str],
    handler: Handler,
    doc: crate::pipeline::Doc,
    grpc: &'static [&'static str],
) -> Endpoint {
    Endpoint { grpc, ..row(paths, GET, Guard::METADATA, handler, doc) }
}

/// A public row: no caller, under the public cap and each peer's share of it.
const fn public(
    paths: &'static [&'static str],
    methods: &'static [Verb],
    handler: Handler,
    doc: crate::pipeline::Doc,
) -> Endpoint {
    Endpoint { charge: Charge::Peer, ..row(paths, methods, Guard::PUBLIC, handler, doc) }
}

/// A row of Vault's: `POST` and `PUT`, its token header read first, its errors in Vault's
/// shape, with `[vault] enabled`.
const fn vault_route(paths: &'static [&'static str], doc: crate::pipeline::Doc) -> Endpoint {
    let methods = &[Verb::Post, Verb::Put];
    Endpoint {
        availability: Availability::Section,
        errors: vault::error_response,
        ..row(paths, methods, VAULT, Handler::Router(vault::router), doc)
    }
}

/// A row of the tickets', guarded by their policy route, with `[tickets] enabled`.
const fn tickets_route(
    paths: &'static [&'static str],
    methods: &'static [Verb],
    router: fn() -> MethodRouter<AppState>,
    doc: crate::pipeline::Doc,
) -> Endpoint {
    let guard = Guard::bearer(Route::Tickets);
    Endpoint {
        availability: Availability::Tickets,
        ..row(paths, methods, guard, Handler::Router(router), doc)
    }
}

/// A row of the beacon's: public, a GET of `beacon::router`'s, with `[beacon] enabled`.
const fn beacon_route(paths: &'static [&'static str], doc: crate::pipeline::Doc) -> Endpoint {
    Endpoint {
        charge: Charge::PeerWaiting,
        availability: BEACON,
        ..public(paths, GET, Handler::Router(beacon::router), doc)
    }
}

/// The API: its router, and whether the pipeline may call the router's GET endpoints directly
/// (see [`Endpoint::answer`]); a router of any other making (a test's) is served as it is.
pub struct Api {
    router: Router,
    direct: bool,
}

impl From<Router> for Api {
    fn from(router: Router) -> Self {
        Api { router, direct: false }
    }
}

/// The API: the REST routes and the gRPC services. Callers are admitted in front of it
/// ([`service`]): every route but the public ones (`/openapi.json`, `/keys`, `/verify`, the
/// beacon's, gRPC health and reflection) needs one (`anonymous` when auth is off).
pub fn router(state: AppState, grpc: Router) -> Api {
    // With every receipt kept, a GET's answer waits for the store: no GET is answered at once.
    let direct = !state.tickets.as_deref().is_some_and(crate::tickets::Tickets::keeps_all);
    let mut router = Router::new();
    // Every row the configuration serves, at each of its paths.
    for endpoint in ENDPOINTS.iter().filter(|e| e.enabled(&state)) {
        for path in endpoint.paths {
            router = router.route(path, method_router(endpoint));
        }
    }
    let router = router
        // A 405 as problem+json on every route (added after all of them); axum keeps Allow.
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        // gRPC callers are admitted by the pipeline too, by method (the rows' `grpc` column).
        .merge(grpc)
        .fallback(not_found);
    Api { router, direct }
}

/// A row as the router's method router for its paths: a GET (and HEAD) of an endpoint that
/// answers at once ([`Endpoint::answer`]), with a POST of a JSON body for a random-output one;
/// the row's own method router for the rest. The admission the pipeline made travels in the
/// request's extensions.
fn method_router(endpoint: &'static Endpoint) -> MethodRouter<AppState> {
    let handler = endpoint.handler;
    if let Handler::Router(router) = handler {
        return router();
    }
    let method = get(move |State(state): State<AppState>, request: Request| async move {
        let (parts, _body) = request.into_parts();
        let admission = parts.extensions.get::<Admission>();
        let answer = endpoint.answer(&state, admission, &parts);
        match admission {
            // (With `[results] keep_all`, the pipeline hands no GET over directly: all come here.)
            Some(admission) => {
                tickets::calls::kept(endpoint, &state, admission, answer).await.into_response()
            }
            None => answer.into_response(),
        }
    });
    match handler {
        Handler::Random(respond) => method.post(move |State(state): State<AppState>, request: Request| {
            post(endpoint, respond, state, request)
        }),
        Handler::State(_) | Handler::Caller(_) | Handler::Router(_) => method,
    }
}

/// A POST of a random-output endpoint: its parameters as a JSON body (`{"n": 256, ...}`),
/// read once the caller was admitted from the head (the pipeline), under the server's body
/// deadline, at most [`body::MAX_JSON_BODY`] bytes of it. One that names a ticket is drawn
/// under it ([`tickets::draw`]).
async fn post(
    endpoint: &'static Endpoint,
    respond: RandomFn,
    state: AppState,
    request: Request,
) -> axum::response::Response {
    let (parts, body) = request.into_parts();
    let Some(admission) = parts.extensions.get::<Admission>().cloned() else {
        return Answer::from(ApiError::Internal).into_response();
    };
    let accept = Accept::of(&parts.headers);
    let answer = match body::json_params(body).await {
        Ok(params) if params.get(Param::Ticket).is_some() => {
            Ok(tickets::draw(endpoint, respond, &state, &admission, accept, params).await)
        }
        Ok(params) => match respond(&state, &admission, accept, &params) {
            Ok(answer) => Ok(tickets::calls::kept(endpoint, &state, &admission, answer).await),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    answer.unwrap_or_else(Answer::from).into_response()
}

/// The API port's service: the router behind the call pipeline ([`crate::pipeline`]: observe,
/// authorize from the head, the server's cap, the caller's quota, run, record), which reads
/// each route's row of [`ENDPOINTS`], applied to the router as a whole so that the cap on
/// requests in progress is shared by every route and both transports.
pub fn service(state: &AppState, api: impl Into<Api>) -> ApiService {
    let Api { router, direct } = api.into();
    PipelineLayer::new(state.clone(), endpoints(), direct).layer(router)
}

/// The table as the pipeline reads it.
pub fn endpoints() -> Endpoints {
    // The table is a constant whose templates the tests match; the router accepted the same
    // templates (it refuses a conflict first).
    Endpoints::new(ENDPOINTS).expect("the endpoint table's templates are distinct")
}

/// The type of [`service`].
pub type ApiService = Pipeline<Router>;

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

#[cfg(test)]
mod tests;
