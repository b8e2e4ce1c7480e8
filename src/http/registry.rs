//! The endpoint registry's rows: the table of `route.rs` (each endpoint's one definition) read
//! into one [`Row`] per endpoint, and what is derived from the rows: the guard of every
//! endpoint and gRPC method, the endpoint of a request's path, whether the configuration
//! serves it, how its errors are written. The router (`http.rs`), the dispatch to handlers
//! (`http/endpoint.rs`) and the OpenAPI document (`http/openapi.rs`) read the same rows, and
//! so does the call pipeline, through `http/endpoint.rs`: each row's gate ([`Guard::gate`],
//! with its front-end's way of reading credentials, `http/credentials.rs`), its limits, the
//! writer of its dialect ([`Dialect::renderer`]), its handler.
//!
//! The table's `handler` and `openapi` columns name functions in this module's scope: the
//! handler modules of `http/` and the operations of `http/openapi/`.

use std::sync::LazyLock;

use axum::response::Response;
use axum::routing::MethodRouter;

use super::openapi::beacon as beacon_doc;
use super::openapi::describe::Operation;
use super::openapi::{drop_in as drop_in_doc, native as native_doc};
use super::params::{Accept, Params};
use super::{beacon, credentials, kms, meta, pollen, random, receipt, values, vault};
use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::{Credentials, Gate, Limits, RecordedResponse, Render, grpc_error};
use crate::route::{Endpoint, ROUTES, Route};
use crate::state::AppState;

/// Everything about one endpoint (`route.rs` says what each column holds).
pub(crate) struct Row {
    /// The endpoint (its label is [`Endpoint::label`]: `route.rs` reads that column).
    pub(crate) endpoint: Endpoint,
    /// The policy route a caller's policy must allow, or none (metadata, public).
    pub(crate) policy: Option<Route>,
    /// The router's path templates, the documented one first.
    pub(crate) paths: &'static [&'static str],
    /// The methods it answers.
    pub(crate) methods: &'static [Verb],
    /// How its caller is named.
    pub(crate) identity: Identity,
    /// What it takes of the caps and quotas.
    pub(crate) limits: Limits,
    /// When the configuration serves it.
    pub(crate) served: Served,
    /// How its errors are written.
    pub(crate) errors: Dialect,
    /// What answers it.
    pub(crate) handler: Handler,
    /// The gRPC methods of `drbgd.v1.RandomnessService` serving the same thing, under its guard.
    pub(crate) grpc: &'static [&'static str],
    /// Whether it can answer a signed receipt (`receipt=true`).
    pub(crate) receipt: bool,
    /// Its entry in the OpenAPI document.
    pub(crate) openapi: Operation,
}

/// An HTTP method an endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    /// `GET`.
    Get,
    /// `HEAD`: a GET without its body (the router answers it with every GET).
    Head,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
}

/// How an endpoint's caller is named, from the request's head (the front layer, before any
/// body is read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Identity {
    /// No caller at all: anyone, under the public cap and each peer's share of it (the
    /// contract, the receipts' keys and verifier, the beacon).
    Public,
    /// A bearer key (`Authorization`) or a client certificate; without either, the caller
    /// `anonymous` (with auth off, or on a route open to it: `[pollen] anonymous`).
    Caller,
    /// As [`Identity::Caller`], Vault's `X-Vault-Token` read first (Vault's clients send it).
    VaultToken,
    /// An AWS SigV4 signature, which covers the body: the head is checked first, and the
    /// endpoint admits the caller the signature names once the body is read.
    SigV4,
}

impl Identity {
    /// How the call pipeline reads this identity's credentials from the head: its front-end's
    /// own reader (`http/credentials.rs`), or none for a public row.
    pub(crate) fn credentials(self) -> Credentials {
        match self {
            Identity::Public => Credentials::Public,
            Identity::Caller => Credentials::Key(credentials::bearer),
            Identity::VaultToken => Credentials::Key(credentials::vault_token),
            Identity::SigV4 => Credentials::Signature(credentials::sigv4_head),
        }
    }
}

/// When the configuration serves an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Served {
    /// Always.
    Always,
    /// With its policy route's drop-in section enabled (`[pollen]`, `[vault]`, `[kms]`).
    BySection,
    /// With `[beacon] enabled`.
    ByBeacon,
}

/// A random-output handler: the parameters (a GET's query or a POST's JSON body) of an
/// admitted caller, `accept` choosing the encoding where the parameters do not.
pub(crate) type RandomFn =
    fn(&AppState, &Admission, Accept<'_>, &Params<'_>) -> Result<RecordedResponse, ApiError>;

/// What answers an endpoint.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// Random output: a GET's query or a POST's JSON body (the same parameters), answered at
    /// once.
    Random(RandomFn),
    /// A GET answered at once from the state.
    Get(fn(&AppState) -> Response),
    /// A GET answered at once for its caller.
    OfCaller(fn(&Admission) -> Response),
    /// The router's own method router: handlers that read a body or wait.
    Router(fn() -> MethodRouter<AppState>),
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
    pub fn render(self, error: &ApiError) -> Response {
        (self.renderer())(error)
    }

    /// The function writing errors as this dialect: what the call pipeline answers its own
    /// refusals with on the row's routes.
    pub fn renderer(self) -> Render {
        match self {
            Dialect::Rest => ApiError::render as Render,
            Dialect::Grpc => grpc_error as Render,
            Dialect::Vault => vault::error_response as Render,
            Dialect::Kms => kms::error_response as Render,
        }
    }
}

/// Who may call an endpoint or a gRPC method: how its caller is named, and the policy route
/// the caller's policy must allow (none: any admitted caller, or, public, no caller at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Guard {
    /// How the caller is named.
    pub(crate) identity: Identity,
    /// The policy route.
    pub(crate) route: Option<Route>,
}

impl Guard {
    /// The gate the call pipeline admits by: the policy route, and the identity's credentials
    /// read as its front-end reads them.
    pub(crate) fn gate(self) -> Gate {
        Gate { credentials: self.identity.credentials(), route: self.route }
    }
}

/// Reads the table into [`ROWS`] (the labels are `route.rs`'s).
macro_rules! rows {
    ($(
        $(#[$doc:meta])*
        $name:ident { label: $label:literal, $($column:ident: $value:expr),* $(,)? }
    ),* $(,)?) => {
        /// Every endpoint's row, in the table's order (that of [`Endpoint::ALL`]).
        static ROWS: [Row; Endpoint::ALL.len()] = [$(
            Row { endpoint: Endpoint::$name, $($column: $value),* }
        ),*];
    };
}
crate::route::endpoint_table!(rows);

// Row i is the row of `Endpoint::ALL[i]` (both are the table's, in its order).
const _: () = {
    let mut i = 0;
    while i < ROWS.len() {
        assert!(ROWS[i].endpoint as usize == i);
        i += 1;
    }
};

impl Endpoint {
    /// Its row.
    pub(super) fn row(self) -> &'static Row {
        &ROWS[self as usize]
    }

    /// The router's paths for it (templates with parameters in braces), the documented one
    /// first.
    pub fn paths(self) -> &'static [&'static str] {
        self.row().paths
    }

    /// Whether it answers GET (and HEAD): all but `/verify` and the drop-in front-ends', which
    /// the router answers 405 with `Allow`.
    pub fn serves_get(self) -> bool {
        self.row().methods.contains(&Verb::Get)
    }

    /// Whether it is one of the beacon's (drand's HTTP API under `/beacon`).
    pub fn beacon(self) -> bool {
        self.row().served == Served::ByBeacon
    }

    /// Whether [`Endpoint::answer`] serves its GET without waiting, so the front layer may call
    /// it directly: all but those the router answers (the beacon's wait for the next round when
    /// asked for it).
    pub fn answers_at_once(self) -> bool {
        !matches!(self.row().handler, Handler::Router(_))
    }

    /// Whether the configuration serves it (the drop-in front-ends and the beacon are off by
    /// default).
    pub fn enabled(self, state: &AppState) -> bool {
        let row = self.row();
        match row.served {
            Served::Always => true,
            Served::BySection => row.policy.is_some_and(|route| state.settings.serves(route)),
            Served::ByBeacon => state.beacon.is_some(),
        }
    }

    /// How its errors are written.
    pub fn dialect(self) -> Dialect {
        self.row().errors
    }

    /// Who may call it: its row's identity and policy route, named for each endpoint (never
    /// derived from its path, so that no random-output endpoint can fall back to a laxer guard).
    pub(super) fn guard(self) -> Guard {
        let row = self.row();
        Guard { identity: row.identity, route: row.policy }
    }

    /// The endpoint a path is for, if any, exactly as the router matches the rows' templates: an
    /// exact label first (most requests), else [`MATCHER`], the router's own matcher.
    pub fn of_path(path: &str) -> Option<Endpoint> {
        if let Some(i) = ROUTES.iter().position(|label| *label == path) {
            return Endpoint::at(i);
        }
        MATCHER.at(path).ok().map(|found| *found.value)
    }
}

/// The rows' templates in `matchit`, the matcher axum's router runs (Cargo.toml pins the version
/// axum pins, and CI checks the build holds one), so that the guard chosen for a path is the
/// guard of the handler the router then calls, whatever the path: empty segments (a parameter
/// may be empty where it is not the last segment), precedence of static segments, trailing
/// slashes. A matcher of our own agreed on the paths it was tested with and not on `//`.
/// Builds [`MATCHER`] now: called where the router is built, so that a template conflict
/// stops start-up instead of panicking in the first request.
pub(super) fn build_matcher() {
    LazyLock::force(&MATCHER);
}

static MATCHER: LazyLock<matchit::Router<Endpoint>> = LazyLock::new(|| {
    let mut matcher = matchit::Router::new();
    for row in &ROWS {
        for template in row.paths {
            // The router accepted the same templates at start-up (a conflict fails there first).
            matcher.insert(*template, row.endpoint).expect("a row's template conflicts with another's");
        }
    }
    matcher
});

/// The path prefix of the randomness service's methods.
pub(crate) const GRPC_SERVICE_PREFIX: &str = "/drbgd.v1.RandomnessService/";

/// The guard of a gRPC path and the method's name (its metrics label): the guard of the row
/// that lists the method. `None` for a path that is no method of the randomness service
/// (health, reflection, a method it does not have: public, tonic answers them without a
/// caller).
pub(crate) fn grpc_guard(path: &str) -> Option<(&'static str, Guard)> {
    let method = path.strip_prefix(GRPC_SERVICE_PREFIX)?;
    ROWS.iter().find_map(|row| {
        let name: &'static str = row.grpc.iter().copied().find(|name| *name == method)?;
        Some((name, row.endpoint.guard()))
    })
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, header};

    use super::super::credentials::X_VAULT_TOKEN;
    use super::*;
    use crate::callers::Key;

    /// What makes a row whole: each column says something the others agree with.
    #[test]
    fn every_row_is_complete_and_consistent() {
        let defaults = crate::config::Settings::defaults();
        let mut templates: Vec<&str> = Vec::new();
        for (i, row) in ROWS.iter().enumerate() {
            let e = row.endpoint;
            assert_eq!(Endpoint::ALL[i], e);
            // The label is the documented path, but where the path is everyone's (KMS's `/`).
            let first = *row.paths.first().unwrap_or_else(|| panic!("{e:?} has no path"));
            assert!(e.label() == first || !e.label().starts_with('/'), "{e:?}");
            templates.extend(row.paths);
            // Methods: none twice, HEAD with every GET (the router answers it).
            assert!(!row.methods.is_empty(), "{e:?}");
            for (j, m) in row.methods.iter().enumerate() {
                assert!(!row.methods[..j].contains(m), "{e:?} lists {m:?} twice");
            }
            assert_eq!(row.methods.contains(&Verb::Get), row.methods.contains(&Verb::Head), "{e:?}");
            // Who and how much: public rows have no caller and no policy route, and only they
            // take the peer's share; a signed request is always admitted to a route.
            let public = row.identity == Identity::Public;
            assert_eq!(public, matches!(row.limits, Limits::Peer | Limits::PeerWaiting), "{e:?}");
            assert!(!public || row.policy.is_none(), "{e:?}: a public row with a policy route");
            assert!(row.identity != Identity::SigV4 || row.policy.is_some(), "{e:?}");
            // A drop-in section serves exactly the routes it is off for by default.
            let by_section = row.policy.is_some_and(|r| !defaults.serves(r));
            assert_eq!(row.served == Served::BySection, by_section, "{e:?}");
            // The handler answers the methods listed.
            let answers: &[Verb] = match row.handler {
                Handler::Random(_) => &[Verb::Get, Verb::Head, Verb::Post],
                Handler::Get(_) | Handler::OfCaller(_) => &[Verb::Get, Verb::Head],
                Handler::Router(_) => row.methods,
            };
            assert_eq!(row.methods, answers, "{e:?}");
            assert!(!matches!(row.handler, Handler::OfCaller(_)) || !public, "{e:?}: no caller to answer");
            assert!(!row.receipt || matches!(row.handler, Handler::Random(_)), "{e:?}");
            assert!(row.grpc.is_empty() || !public, "{e:?}: gRPC methods are never public");
            // Every template leads back to its row.
            for path in row.paths {
                let concrete = path
                    .replace("{a}", "platform")
                    .replace("{b}", "32")
                    .replace("{chain}", &"ab".repeat(32))
                    .replace("{round}", "7");
                assert_eq!(Endpoint::of_path(&concrete), Some(e), "{path}");
            }
        }
        let count = templates.len();
        templates.sort_unstable();
        templates.dedup();
        assert_eq!(templates.len(), count, "a path template in two rows");
        // Every policy route admits to some row (route.rs checks it at compile time too).
        for r in Route::ALL {
            assert!(ROWS.iter().any(|row| row.policy == Some(r)), "{r:?}");
        }
    }

    /// The document has every row's path, with exactly the row's methods (but HEAD).
    #[test]
    fn the_document_describes_every_row() {
        let rules = crate::service::Rules::from_settings(&crate::config::Settings::defaults());
        let document = super::super::openapi::document(&rules, true, Some(65_536), true, |_| true);
        assert_eq!(document.paths.paths.len(), ROWS.len());
        for row in &ROWS {
            let label = row.endpoint.label();
            let item = document.paths.paths.get(row.paths[0]).unwrap_or_else(|| panic!("{label}"));
            let has = |verb: Verb| row.methods.contains(&verb);
            assert_eq!(item.get.is_some(), has(Verb::Get), "{label}");
            assert_eq!(item.post.is_some(), has(Verb::Post), "{label}");
            assert_eq!(item.put.is_some(), has(Verb::Put), "{label}");
            assert!(item.delete.is_none() && item.patch.is_none(), "{label}");
        }
    }

    #[test]
    fn paths_are_matched_as_the_router_matches_them() {
        assert_eq!(Endpoint::of_path("/"), Some(Endpoint::Kms));
        assert_eq!(Endpoint::of_path("/kms"), None);
        assert_eq!(Endpoint::of_path("/v1/sys/tools/randomx"), None);
        assert_eq!(Endpoint::of_path("/v1/transit/random/hex"), Some(Endpoint::VaultTransit));
        // The beacon's paths: static segments first.
        assert_eq!(Endpoint::of_path("/beacon/public/info"), Some(Endpoint::BeaconRound));
        assert_eq!(Endpoint::of_path("/beacon/public/latest"), Some(Endpoint::BeaconLatest));
        assert_eq!(Endpoint::of_path("/beacon/x/public/latest"), Some(Endpoint::BeaconLatest));
        assert_eq!(Endpoint::of_path("/beacon/info/info"), Some(Endpoint::BeaconInfo));
        assert_eq!(Endpoint::of_path("/beacon/x/chains"), None);
        assert_eq!(Endpoint::of_path("/beacon/x/public/7/8"), None);
        assert_eq!(Endpoint::of_path("/beacon/x/public/"), None);
        // An empty parameter where it is not the last segment is the router's match too.
        assert_eq!(Endpoint::of_path("/beacon//info"), Some(Endpoint::BeaconInfo));
        assert_eq!(Endpoint::of_path("/v1/sys/tools/random//32"), Some(Endpoint::Vault));
        assert_eq!(Endpoint::of_path("/v1/sys/tools/random/"), None);
        assert_eq!(Endpoint::of_path("/beacon"), None);
        assert_eq!(Endpoint::of_path("/drbgd.v1.RandomnessService/GetBits"), None);
    }

    #[test]
    fn every_grpc_method_is_a_rows_and_only_its_own() {
        use prost::Message;
        // The methods the service declares, read from its descriptor: each is in one row (a new
        // method must be added to the row serving the same thing), and nothing else is.
        let set = prost_types::FileDescriptorSet::decode(crate::grpc::pb::FILE_DESCRIPTOR_SET).unwrap();
        let mut declared: Vec<String> = set
            .file
            .iter()
            .flat_map(|f| &f.service)
            .filter(|s| s.name() == "RandomnessService")
            .flat_map(|s| s.method.iter().map(|m| m.name().to_string()))
            .collect();
        let mut listed: Vec<String> =
            ROWS.iter().flat_map(|row| row.grpc.iter().map(|n| n.to_string())).collect();
        declared.sort();
        listed.sort();
        assert_eq!(declared, listed);
        for row in &ROWS {
            for &name in row.grpc {
                let guard = Some((name, row.endpoint.guard()));
                assert_eq!(grpc_guard(&format!("{GRPC_SERVICE_PREFIX}{name}")), guard);
                assert_eq!(grpc_guard(&format!("{GRPC_SERVICE_PREFIX}{name}x")), None);
                assert_eq!(grpc_guard(&format!("/other.Service/{name}")), None);
            }
        }
        assert_eq!(
            grpc_guard(&format!("{GRPC_SERVICE_PREFIX}GetBits")).map(|(_, g)| g),
            Some(Guard { identity: Identity::Caller, route: Some(Route::Bits) })
        );
        assert_eq!(
            grpc_guard(&format!("{GRPC_SERVICE_PREFIX}GetUsage")).map(|(_, g)| g),
            Some(Guard { identity: Identity::Caller, route: None })
        );
        assert_eq!(grpc_guard("/grpc.health.v1.Health/Check"), None);
        // The path prefix is the service's full name.
        assert_eq!(GRPC_SERVICE_PREFIX, format!("/{}/", crate::grpc::SERVICE_NAME));
    }

    /// The key the pipeline reads from `headers` for `identity` (none where it reads no key).
    fn key(identity: Identity, headers: &HeaderMap) -> Option<Key<'_>> {
        match identity.credentials() {
            Credentials::Key(read) => read(headers),
            Credentials::Public | Credentials::Signature(_) => None,
        }
    }

    #[test]
    fn vault_rows_read_the_vault_token_first() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "Bearer k".parse().unwrap());
        assert!(matches!(key(Identity::VaultToken, &headers), Some(Key::Bearer(b"Bearer k"))));
        headers.insert(X_VAULT_TOKEN, "".parse().unwrap());
        assert!(matches!(key(Identity::VaultToken, &headers), Some(Key::Bearer(_))), "empty is none");
        headers.insert(X_VAULT_TOKEN, "t".parse().unwrap());
        assert!(matches!(key(Identity::VaultToken, &headers), Some(Key::Raw(b"t"))));
        assert!(matches!(key(Identity::Caller, &headers), Some(Key::Bearer(_))));
        assert!(key(Identity::Public, &headers).is_none() && key(Identity::SigV4, &headers).is_none());
        // Only KMS's rows check a signed head, and only public rows read nothing at all.
        for row in &ROWS {
            let gate = row.endpoint.guard().gate();
            assert_eq!(
                matches!(gate.credentials, Credentials::Signature(_)),
                row.identity == Identity::SigV4
            );
            assert_eq!(gate.public(), row.identity == Identity::Public, "{:?}", row.endpoint);
        }
    }
}
