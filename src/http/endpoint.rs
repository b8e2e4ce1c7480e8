//! The API's endpoints and who may call them: the REST GET endpoints, one per route of
//! [`ROUTES`] (same order), each a plain function from the request's head and its caller's
//! admission to its response; the random-output endpoints' POST (the same parameters as a JSON
//! body); and the guard of every gRPC method ([`grpc_guard`]). The front layer admits the
//! caller a guard asks for before anything else runs (see `http/front.rs`). Every GET endpoint
//! but the beacon's answers without waiting (the generators are in-process; a large output
//! streams from its body), so none needs a future of its own; the beacon's may wait for the
//! next round, and are the router's futures ([`Endpoint::answers_at_once`]).
//!
//! The router serves them (and a HEAD, which it answers without the body), and the front layer
//! calls those that answer at once directly for a GET of a route's exact path: the same
//! function, without the router's path match, method dispatch, boxed service and boxed future,
//! extractors and the request extension that handed the admission on (measured in
//! benches/README.md).

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, get, post};

use super::params::{Accept, Params};
use super::{RecordedResponse, beacon, kms, meta, openapi, pollen, random, receipt, values, vault};
use crate::callers::{Admission, Route};
use crate::error::ApiError;
use crate::state::AppState;

pub use crate::route::ROUTES;

/// Who may call an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Anyone, unadmitted (the contract).
    Public,
    /// Any admitted caller: an in-flight place, no route permission, no request token
    /// (metadata).
    Caller,
    /// A caller admitted to this random-output route.
    Route(Route),
    /// A caller named by the request's signature, which covers its body (the KMS front-end's
    /// AWS SigV4): admitted to this route by the endpoint once the body is read. Until then
    /// the request holds a place under a cap of its own, as public ones do.
    Signed(Route),
}

/// How a route's errors are written: each drop-in front-end answers as the service it stands in
/// for, so its clients read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// problem+json.
    Rest,
    /// A gRPC status.
    Grpc,
    /// Vault's `{"errors": [...]}`.
    Vault,
    /// AWS JSON's `{"__type", "message"}`.
    Kms,
}

impl Dialect {
    /// `error` as this dialect writes it.
    pub fn render(self, error: &ApiError) -> axum::response::Response {
        match self {
            Dialect::Rest => error.render(),
            Dialect::Grpc => error.to_status().into_http::<axum::body::Body>(),
            Dialect::Vault => vault::error_response(error),
            Dialect::Kms => kms::error_response(error),
        }
    }
}

/// A GET endpoint of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/bits`.
    Bits,
    /// `/bytes`.
    Bytes,
    /// `/token`.
    Token,
    /// `/nonce`.
    Nonce,
    /// `/uuid`.
    Uuid,
    /// `/int`.
    Int,
    /// `/pollen` (POST only; with `[pollen] enabled`).
    Pollen,
    /// `/v1/sys/tools/random[/…]` (POST and PUT; with `[vault] enabled`).
    Vault,
    /// `POST /` with `X-Amz-Target` (with `[kms] enabled`); labelled `kms`.
    Kms,
    /// `/algorithms` (metadata: a caller, no route permission).
    Algorithms,
    /// `/usage` (metadata).
    Usage,
    /// `/openapi.json` (public: the contract).
    OpenApi,
    /// `/v1/transit/random[/…]`: Vault's other path to the same thing.
    VaultTransit,
    /// `/keys`: the receipts' verification keys, a JWKS (public: they hold no secret).
    Keys,
    /// `POST /verify`: checks a receipt (public).
    Verify,
    /// `/beacon/info` (public; with `[beacon] enabled`, as the four below; each also under
    /// `/beacon/{chainhash}/`).
    BeaconInfo,
    /// `/beacon/public/latest`.
    BeaconLatest,
    /// `/beacon/public/{round}`.
    BeaconRound,
    /// `/beacon/chains`.
    BeaconChains,
    /// `/beacon/health`.
    BeaconHealth,
}

impl Endpoint {
    /// Every endpoint, in the order of [`ROUTES`].
    pub const ALL: [Endpoint; 20] = [
        Endpoint::Bits,
        Endpoint::Bytes,
        Endpoint::Token,
        Endpoint::Nonce,
        Endpoint::Uuid,
        Endpoint::Int,
        Endpoint::Pollen,
        Endpoint::Vault,
        Endpoint::Kms,
        Endpoint::Algorithms,
        Endpoint::Usage,
        Endpoint::OpenApi,
        Endpoint::VaultTransit,
        Endpoint::Keys,
        Endpoint::Verify,
        Endpoint::BeaconInfo,
        Endpoint::BeaconLatest,
        Endpoint::BeaconRound,
        Endpoint::BeaconChains,
        Endpoint::BeaconHealth,
    ];

    /// The endpoint at `index` of [`ROUTES`].
    pub fn at(index: usize) -> Option<Endpoint> {
        Endpoint::ALL.get(index).copied()
    }

    /// Whether it answers GET (all but `/verify` and the drop-in front-ends', which the router
    /// answers 405 with `Allow`).
    pub fn serves_get(self) -> bool {
        self != Endpoint::Verify && !matches!(self.guard(), Guard::Route(r) | Guard::Signed(r) if r.drop_in())
    }

    /// Whether it is one of the beacon's (drand's HTTP API under `/beacon`).
    pub fn beacon(self) -> bool {
        matches!(
            self,
            Endpoint::BeaconInfo
                | Endpoint::BeaconLatest
                | Endpoint::BeaconRound
                | Endpoint::BeaconChains
                | Endpoint::BeaconHealth
        )
    }

    /// Whether [`Endpoint::answer`] serves its GET without waiting, so the front layer may call
    /// it directly: all but the beacon's, which waits for the next round when asked for it
    /// (its handler is the router's, a future).
    pub fn answers_at_once(self) -> bool {
        !self.beacon()
    }

    /// Whether the configuration serves it (the drop-in front-ends and the beacon are off by
    /// default).
    pub fn enabled(self, state: &AppState) -> bool {
        if self.beacon() {
            return state.beacon.is_some();
        }
        match self.guard() {
            Guard::Route(route) | Guard::Signed(route) => state.settings.serves(route),
            Guard::Public | Guard::Caller => true,
        }
    }

    /// Its label in metrics and log lines: its entry in [`ROUTES`].
    pub fn label(self) -> &'static str {
        ROUTES[self as usize]
    }

    /// The router paths it answers: its label but for Vault's (a source and a byte count may
    /// follow in the path), KMS's (`/`) and the beacon's (also under `/beacon/{chainhash}/`).
    pub fn paths(self) -> &'static [&'static str] {
        match self {
            Endpoint::Vault => {
                &["/v1/sys/tools/random", "/v1/sys/tools/random/{a}", "/v1/sys/tools/random/{a}/{b}"]
            }
            Endpoint::VaultTransit => {
                &["/v1/transit/random", "/v1/transit/random/{a}", "/v1/transit/random/{a}/{b}"]
            }
            Endpoint::Kms => &["/"],
            Endpoint::BeaconInfo => &["/beacon/info", "/beacon/{chain}/info"],
            Endpoint::BeaconLatest => &["/beacon/public/latest", "/beacon/{chain}/public/latest"],
            Endpoint::BeaconRound => &["/beacon/public/{round}", "/beacon/{chain}/public/{round}"],
            Endpoint::BeaconHealth => &["/beacon/health", "/beacon/{chain}/health"],
            _ => std::slice::from_ref(&ROUTES[self as usize]),
        }
    }

    /// The endpoint a path is for, if any: an exact route, or Vault's paths with a source or a
    /// byte count after them, or `/` (KMS), or the beacon's paths as its router matches them.
    pub fn of_path(path: &str) -> Option<Endpoint> {
        if let Some(i) = ROUTES.iter().position(|r| *r == path) {
            return Endpoint::at(i);
        }
        if path == "/" {
            return Some(Endpoint::Kms);
        }
        if path.starts_with("/beacon/") {
            return beacon::parse(path).map(|p| match p.resource {
                beacon::Resource::Info => Endpoint::BeaconInfo,
                beacon::Resource::Health => Endpoint::BeaconHealth,
                beacon::Resource::Chains => Endpoint::BeaconChains,
                beacon::Resource::Latest => Endpoint::BeaconLatest,
                beacon::Resource::Round(_) => Endpoint::BeaconRound,
            });
        }
        let under = |e: &Endpoint| path.strip_prefix(e.label()).is_some_and(|rest| rest.starts_with('/'));
        [Endpoint::Vault, Endpoint::VaultTransit].into_iter().find(under)
    }

    /// How its errors are written.
    pub fn dialect(self) -> Dialect {
        match self {
            Endpoint::Vault | Endpoint::VaultTransit => Dialect::Vault,
            Endpoint::Kms => Dialect::Kms,
            _ => Dialect::Rest,
        }
    }

    /// Who may call it, named here for each endpoint (never derived from its path, so that no
    /// random-output endpoint can fall back to a laxer guard).
    pub fn guard(self) -> Guard {
        match self {
            Endpoint::Bits => Guard::Route(Route::Bits),
            Endpoint::Bytes => Guard::Route(Route::Bytes),
            Endpoint::Token => Guard::Route(Route::Token),
            Endpoint::Nonce => Guard::Route(Route::Nonce),
            Endpoint::Uuid => Guard::Route(Route::Uuid),
            Endpoint::Int => Guard::Route(Route::Int),
            Endpoint::Pollen => Guard::Route(Route::Pollen),
            Endpoint::Vault | Endpoint::VaultTransit => Guard::Route(Route::Vault),
            Endpoint::Kms => Guard::Signed(Route::Kms),
            Endpoint::Algorithms | Endpoint::Usage => Guard::Caller,
            // The receipts' keys and verifier, and the beacon's rounds, are public by design:
            // anyone may fetch and check them.
            Endpoint::OpenApi
            | Endpoint::Keys
            | Endpoint::Verify
            | Endpoint::BeaconInfo
            | Endpoint::BeaconLatest
            | Endpoint::BeaconRound
            | Endpoint::BeaconChains
            | Endpoint::BeaconHealth => Guard::Public,
        }
    }

    /// Whether it is a random-output endpoint of drbgd's own API: its parameters come as a
    /// GET's query or a POST's JSON body, `receipt=true` included.
    pub fn random_output(self) -> bool {
        matches!(
            self,
            Endpoint::Bits
                | Endpoint::Bytes
                | Endpoint::Token
                | Endpoint::Nonce
                | Endpoint::Uuid
                | Endpoint::Int
        )
    }

    /// The response to a GET of this endpoint (errors as problem+json), for a caller
    /// admitted as [`Endpoint::guard`] says (`None` only for a public endpoint). Only for the
    /// endpoints that [answer at once](Endpoint::answers_at_once).
    pub fn answer(self, state: &AppState, admission: Option<&Admission>, parts: &Parts) -> RecordedResponse {
        match self {
            Endpoint::OpenApi => return openapi::get(state).into(),
            Endpoint::Keys => return receipt::keys(state).into(),
            // POST only: the front layer sends its GETs to the router, whose 405 names POST.
            Endpoint::Verify => return ApiError::MethodNotAllowed.into(),
            // The beacon's are the router's futures: the front layer never calls them here.
            e if e.beacon() => return ApiError::Internal.into(),
            _ => {}
        }
        // The front layer admits before it calls; a guarded endpoint reached without an
        // admission is a wiring fault, never served.
        let Some(admission) = admission else { return ApiError::Internal.into() };
        let answer = match self {
            Endpoint::Bits
            | Endpoint::Bytes
            | Endpoint::Token
            | Endpoint::Nonce
            | Endpoint::Uuid
            | Endpoint::Int => Params::of(parts).and_then(|params| {
                // HEAD leaves out the body: a receipt would be signed and audited unseen.
                if parts.method == axum::http::Method::HEAD && params.flag(super::params::Param::Receipt)? {
                    return Err(ApiError::invalid(
                        "receipt_on_head",
                        "receipt",
                        "a receipt is in the body, which HEAD leaves out: ask with GET",
                    ));
                }
                self.respond(state, admission, Accept::of(&parts.headers), &params)
            }),
            // POST only: the front layer sends its GETs to the router, whose 405 names POST.
            Endpoint::Pollen | Endpoint::Vault | Endpoint::VaultTransit | Endpoint::Kms => {
                Err(ApiError::MethodNotAllowed)
            }
            Endpoint::Algorithms => Ok(meta::algorithms(state).into()),
            Endpoint::Usage => Ok(meta::usage(admission).into()),
            Endpoint::OpenApi
            | Endpoint::Keys
            | Endpoint::Verify
            | Endpoint::BeaconInfo
            | Endpoint::BeaconLatest
            | Endpoint::BeaconRound
            | Endpoint::BeaconChains
            | Endpoint::BeaconHealth => Err(ApiError::Internal),
        };
        answer.unwrap_or_else(RecordedResponse::from)
    }

    /// The response of a random-output endpoint to its parameters (a GET's query, a POST's
    /// JSON body), `accept` choosing the encoding where the parameters do not.
    ///
    /// # Errors
    /// The endpoint's, as problem+json; 405 for an endpoint that takes no parameters.
    fn respond(
        self,
        state: &AppState,
        admission: &Admission,
        accept: Accept<'_>,
        params: &Params<'_>,
    ) -> Result<RecordedResponse, ApiError> {
        match self {
            Endpoint::Bits => random::bits(state, admission, accept, params),
            Endpoint::Bytes => random::bytes(state, admission, accept, params),
            Endpoint::Token => values::token(state, admission, accept, params),
            Endpoint::Nonce => values::nonce(state, admission, accept, params),
            Endpoint::Uuid => values::uuid(state, admission, accept, params),
            Endpoint::Int => values::int(state, admission, accept, params),
            _ => Err(ApiError::MethodNotAllowed),
        }
    }

    /// The endpoint as the router's method router for its path (a POST with a JSON body added
    /// to every random-output endpoint; `/pollen` and `/verify` are POST only): the admission
    /// the front layer made travels in the request's extensions.
    pub fn method_router(self) -> MethodRouter<AppState> {
        match self {
            Endpoint::Pollen => return post(pollen::post),
            Endpoint::Vault | Endpoint::VaultTransit => {
                return post(vault::post).put(vault::post).fallback(vault::method_not_allowed);
            }
            Endpoint::Kms => return post(kms::post).fallback(kms::method_not_allowed),
            Endpoint::Verify => return post(receipt::verify),
            // drand's API: a GET (and HEAD) of any of these paths; the query string is ignored.
            e if e.beacon() => return get(beacon::get),
            _ => {}
        }
        let method = get(move |State(state): State<AppState>, request: Request| {
            let (parts, _body) = request.into_parts();
            let admission = parts.extensions.get::<Admission>();
            std::future::ready(self.answer(&state, admission, &parts).into_response())
        });
        if self.random_output() {
            method.post(move |State(state): State<AppState>, request: Request| self.post(state, request))
        } else {
            method
        }
    }

    /// A POST of a random-output endpoint: its parameters as a JSON body (`{"n": 256, ...}`),
    /// read once the caller was admitted from the head (the front layer), under the server's
    /// body deadline, at most [`random::MAX_JSON_BODY`] bytes of it.
    async fn post(self, state: AppState, request: Request) -> axum::response::Response {
        let (parts, body) = request.into_parts();
        let Some(admission) = parts.extensions.get::<Admission>().cloned() else {
            return RecordedResponse::from(ApiError::Internal).into_response();
        };
        let answer = match random::json_params(body).await {
            Ok(params) => self.respond(&state, &admission, Accept::of(&parts.headers), &params),
            Err(e) => Err(e),
        };
        answer.unwrap_or_else(RecordedResponse::from).into_response()
    }
}

/// The gRPC methods of `drbgd.v1.RandomnessService` and their guards, the same as the REST
/// route serving the same output. Paths outside this table (health, reflection, a method
/// the service does not have) are public: tonic answers them without a caller.
const GRPC_METHODS: [(&str, Guard); 8] = [
    ("GetBits", Guard::Route(Route::Bits)),
    ("GetBytes", Guard::Route(Route::Bytes)),
    ("StreamBits", Guard::Route(Route::Bits)),
    ("GetToken", Guard::Route(Route::Token)),
    ("GetNonce", Guard::Route(Route::Nonce)),
    ("GetUuids", Guard::Route(Route::Uuid)),
    ("GetInts", Guard::Route(Route::Int)),
    ("GetUsage", Guard::Caller),
];

/// The public gRPC methods whose calls are streams meant to stay open: they get a cap and a
/// lifetime of their own (see the front layer's `PUBLIC_STREAMS`).
const PUBLIC_STREAMS: [&str; 3] = [
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// Whether `path` is a public gRPC streaming method (health `Watch`, reflection).
pub fn public_stream(path: &str) -> bool {
    PUBLIC_STREAMS.contains(&path)
}

/// The path prefix of the randomness service's methods.
pub(crate) const GRPC_SERVICE_PREFIX: &str = "/drbgd.v1.RandomnessService/";

/// The guard of a gRPC path and the method's name (its metrics label), or `None` for a path
/// that is no method of the randomness service.
pub fn grpc_guard(path: &str) -> Option<(&'static str, Guard)> {
    let method = path.strip_prefix(GRPC_SERVICE_PREFIX)?;
    GRPC_METHODS.iter().find(|(name, _)| *name == method).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_routes_line_up() {
        assert_eq!(Endpoint::ALL.len(), ROUTES.len());
        for (i, e) in Endpoint::ALL.into_iter().enumerate() {
            assert_eq!(e as usize, i);
            assert_eq!(Endpoint::at(i), Some(e));
        }
        assert_eq!(Endpoint::at(ROUTES.len()), None);
        // Each random-output endpoint is guarded by the route of its own path, and every
        // route has its endpoint; the others are metadata, but for the public contract.
        for e in Endpoint::ALL {
            match e.guard() {
                Guard::Route(Route::Vault) => assert!(e.label().starts_with("/v1/"), "{e:?}"),
                Guard::Route(route) | Guard::Signed(route) => assert_eq!(route.path(), e.label()),
                Guard::Caller => assert!(matches!(e, Endpoint::Algorithms | Endpoint::Usage), "{e:?}"),
                Guard::Public => assert!(
                    matches!(e, Endpoint::OpenApi | Endpoint::Keys | Endpoint::Verify) || e.beacon(),
                    "{e:?}"
                ),
            }
            assert_eq!(e.answers_at_once(), !e.label().starts_with("/beacon/"), "{e:?}");
            for path in e.paths() {
                let concrete = path
                    .replace("{a}", "platform")
                    .replace("{b}", "32")
                    .replace("{chain}", &"ab".repeat(32))
                    .replace("{round}", "7");
                assert_eq!(Endpoint::of_path(&concrete), Some(e), "{path}");
            }
        }
        for r in Route::ALL {
            let guards = [Guard::Route(r), Guard::Signed(r)];
            assert!(Endpoint::ALL.iter().any(|e| guards.contains(&e.guard())), "{r:?}");
        }
        assert_eq!(Endpoint::of_path("/v1/sys/tools/randomx"), None);
        assert_eq!(Endpoint::of_path("/kms"), None);
        // The beacon's paths, as its router matches them: static segments first.
        assert_eq!(Endpoint::of_path("/beacon/public/info"), Some(Endpoint::BeaconRound));
        assert_eq!(Endpoint::of_path("/beacon/x/chains"), None);
        assert_eq!(Endpoint::of_path("/beacon/x/public/7/8"), None);
        assert_eq!(Endpoint::of_path("/beacon//info"), None);
        assert_eq!(Endpoint::of_path("/beacon"), None);
    }

    #[test]
    fn every_grpc_method_is_guarded_and_only_its_own() {
        use prost::Message;
        // The methods the service declares, read from its descriptor: each has a guard here
        // (a new method must be added), and nothing else has.
        let set = prost_types::FileDescriptorSet::decode(crate::grpc::pb::FILE_DESCRIPTOR_SET).unwrap();
        let mut declared: Vec<String> = set
            .file
            .iter()
            .flat_map(|f| &f.service)
            .filter(|s| s.name() == "RandomnessService")
            .flat_map(|s| s.method.iter().map(|m| m.name().to_string()))
            .collect();
        let mut guarded: Vec<String> = GRPC_METHODS.iter().map(|(n, _)| n.to_string()).collect();
        declared.sort();
        guarded.sort();
        assert_eq!(declared, guarded);
        for (name, guard) in GRPC_METHODS {
            assert_eq!(grpc_guard(&format!("{GRPC_SERVICE_PREFIX}{name}")), Some((name, guard)));
            assert_eq!(grpc_guard(&format!("{GRPC_SERVICE_PREFIX}{name}x")), None);
            assert_eq!(grpc_guard(&format!("/other.Service/{name}")), None);
        }
        assert_eq!(grpc_guard("/grpc.health.v1.Health/Check"), None);
        // The path prefix is the service's full name.
        assert_eq!(GRPC_SERVICE_PREFIX, format!("/{}/", crate::grpc::SERVICE_NAME));
    }
}
