//! The endpoint registry: one table, one row per endpoint (`endpoint_table!` below), written
//! here, below everything that needs its names. This module reads from it the endpoints'
//! names ([`Endpoint`]), their labels in metrics and log lines ([`ROUTES`]) and the names of
//! the policy routes ([`Route`]) that a caller's policy lists in the configuration; the HTTP
//! layer reads the same table into rows that also hold each endpoint's guard, handler, gRPC
//! methods and OpenAPI operation (`http/registry.rs`, where the names in those columns are
//! in scope). Nothing is kept in step with anything by hand: a new endpoint is a row, and the
//! compiler refuses a row that leaves a column out.
//!
//! docs/extending.md walks through adding one.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The table of endpoints. `endpoint_table!(then)` hands every row to the macro `then`, which
/// makes of them what its module needs. Each row is the endpoint's name with its doc comment,
/// then its columns, `label` and `policy` first (this module reads those two), every other
/// one a field of `http::registry::Row` named in that module's scope:
///
/// - `label`: the metric and log label: the path template (parameters in braces), or a name
///   where the path is everyone's (`kms`: KMS's path is `/`);
/// - `policy`: the [`Route`] a caller's policy must allow (`None`: metadata or public); the
///   first row of a route names it in the configuration;
/// - `paths`: the router's templates, the documented one first; `methods`: what it answers;
/// - `identity`: how its caller is named (bearer key or client certificate, Vault's token,
///   AWS SigV4, or no caller at all: public); `limits`: what it takes of the caps and quotas;
/// - `served`: always, with its drop-in section on, or with the beacon on; `errors`: the
///   dialect its errors are written in;
/// - `handler`: what answers it; `grpc`: the gRPC methods serving the same thing (admitted by
///   this row's guard); `receipt`: whether it can answer a signed receipt; `openapi`: the
///   function describing it in `/openapi.json`.
macro_rules! endpoint_table {
    ($then:ident) => {
        $then! {
            /// `/bits`: n random bits, packed MSB-first (`POST`: the parameters as a JSON body).
            Bits {
                label: "/bits", policy: Some(Route::Bits),
                paths: &["/bits"], methods: &[Verb::Get, Verb::Head, Verb::Post],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Random(random::bits), grpc: &["GetBits", "StreamBits"], receipt: true,
                openapi: native_doc::bits,
            },
            /// `/bytes`: n random bytes.
            Bytes {
                label: "/bytes", policy: Some(Route::Bytes),
                paths: &["/bytes"], methods: &[Verb::Get, Verb::Head, Verb::Post],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Random(random::bytes), grpc: &["GetBytes"], receipt: true,
                openapi: native_doc::bytes,
            },
            /// `/token`: a token for sessions, API keys, CSRF.
            Token {
                label: "/token", policy: Some(Route::Token),
                paths: &["/token"], methods: &[Verb::Get, Verb::Head, Verb::Post],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Random(values::token), grpc: &["GetToken"], receipt: true,
                openapi: native_doc::token,
            },
            /// `/nonce`: a nonce for an AEAD.
            Nonce {
                label: "/nonce", policy: Some(Route::Nonce),
                paths: &["/nonce"], methods: &[Verb::Get, Verb::Head, Verb::Post],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Random(values::nonce), grpc: &["GetNonce"], receipt: true,
                openapi: native_doc::nonce,
            },
            /// `/uuid`: RFC 9562 UUIDs.
            Uuid {
                label: "/uuid", policy: Some(Route::Uuid),
                paths: &["/uuid"], methods: &[Verb::Get, Verb::Head, Verb::Post],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Random(values::uuid), grpc: &["GetUuids"], receipt: true,
                openapi: native_doc::uuid,
            },
            /// `/int`: uniform integers in `[min, max]`.
            Int {
                label: "/int", policy: Some(Route::Int),
                paths: &["/int"], methods: &[Verb::Get, Verb::Head, Verb::Post],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Random(values::int), grpc: &["GetInts"], receipt: true,
                openapi: native_doc::int,
            },
            /// `POST /pollen`: the Pollen protocol's seed for a booting VM (with `[pollen] enabled`).
            Pollen {
                label: "/pollen", policy: Some(Route::Pollen),
                paths: &["/pollen"], methods: &[Verb::Post],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::BySection, errors: Dialect::Rest,
                handler: Handler::Router(pollen::router), grpc: &[], receipt: false,
                openapi: native_doc::pollen,
            },
            /// `/v1/sys/tools/random[/…]`: Vault's random bytes, `POST` and `PUT` (with `[vault] enabled`).
            Vault {
                label: "/v1/sys/tools/random", policy: Some(Route::Vault),
                paths: &["/v1/sys/tools/random", "/v1/sys/tools/random/{a}", "/v1/sys/tools/random/{a}/{b}"],
                methods: &[Verb::Post, Verb::Put],
                identity: Identity::VaultToken, limits: Limits::Quota, served: Served::BySection, errors: Dialect::Vault,
                handler: Handler::Router(vault::router), grpc: &[], receipt: false,
                openapi: drop_in_doc::vault_sys,
            },
            /// `/v1/transit/random[/…]`: Vault's other path to the same thing.
            VaultTransit {
                label: "/v1/transit/random", policy: Some(Route::Vault),
                paths: &["/v1/transit/random", "/v1/transit/random/{a}", "/v1/transit/random/{a}/{b}"],
                methods: &[Verb::Post, Verb::Put],
                identity: Identity::VaultToken, limits: Limits::Quota, served: Served::BySection, errors: Dialect::Vault,
                handler: Handler::Router(vault::router), grpc: &[], receipt: false,
                openapi: drop_in_doc::vault_transit,
            },
            /// `POST /` with `X-Amz-Target`: AWS KMS `GenerateRandom` (with `[kms] enabled`).
            Kms {
                label: "kms", policy: Some(Route::Kms),
                paths: &["/"], methods: &[Verb::Post],
                identity: Identity::SigV4, limits: Limits::Quota, served: Served::BySection, errors: Dialect::Kms,
                handler: Handler::Router(kms::router), grpc: &[], receipt: false,
                openapi: drop_in_doc::kms,
            },
            /// `/algorithms`: the generators and their settings (metadata: any caller).
            Algorithms {
                label: "/algorithms", policy: None,
                paths: &["/algorithms"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Get(meta::algorithms), grpc: &[], receipt: false,
                openapi: native_doc::algorithms,
            },
            /// `/usage`: the calling caller's policy, quota and counters (metadata).
            Usage {
                label: "/usage", policy: None,
                paths: &["/usage"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::OfCaller(meta::usage), grpc: &["GetUsage"], receipt: false,
                openapi: native_doc::usage,
            },
            /// `/version`: the server's name and version (metadata).
            Version {
                label: "/version", policy: None,
                paths: &["/version"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Caller, limits: Limits::Quota, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Get(meta::version), grpc: &[], receipt: false,
                openapi: native_doc::version,
            },
            /// `/openapi.json`: the contract (public).
            OpenApi {
                label: "/openapi.json", policy: None,
                paths: &["/openapi.json"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Public, limits: Limits::Peer, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Get(meta::openapi), grpc: &[], receipt: false,
                openapi: native_doc::openapi,
            },
            /// `/keys`: the receipts' verification keys, a JWKS (public: they hold no secret).
            Keys {
                label: "/keys", policy: None,
                paths: &["/keys"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Public, limits: Limits::Peer, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Get(receipt::keys), grpc: &[], receipt: false,
                openapi: native_doc::keys,
            },
            /// `POST /verify`: checks a receipt (public).
            Verify {
                label: "/verify", policy: None,
                paths: &["/verify"], methods: &[Verb::Post],
                identity: Identity::Public, limits: Limits::Peer, served: Served::Always, errors: Dialect::Rest,
                handler: Handler::Router(receipt::verify_router), grpc: &[], receipt: false,
                openapi: native_doc::verify,
            },
            /// `/beacon/info`: the chain's parameters (public; with `[beacon] enabled`, as the
            /// four below; each but `/chains` also under `/beacon/{chainhash}/`).
            BeaconInfo {
                label: "/beacon/info", policy: None,
                paths: &["/beacon/info", "/beacon/{chain}/info"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Public, limits: Limits::PeerWaiting, served: Served::ByBeacon, errors: Dialect::Rest,
                handler: Handler::Router(beacon::router), grpc: &[], receipt: false,
                openapi: beacon_doc::info,
            },
            /// `/beacon/public/latest`: the latest round.
            BeaconLatest {
                label: "/beacon/public/latest", policy: None,
                paths: &["/beacon/public/latest", "/beacon/{chain}/public/latest"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Public, limits: Limits::PeerWaiting, served: Served::ByBeacon, errors: Dialect::Rest,
                handler: Handler::Router(beacon::router), grpc: &[], receipt: false,
                openapi: beacon_doc::latest,
            },
            /// `/beacon/public/{round}`: a round once due (the next one is waited for).
            BeaconRound {
                label: "/beacon/public/{round}", policy: None,
                paths: &["/beacon/public/{round}", "/beacon/{chain}/public/{round}"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Public, limits: Limits::PeerWaiting, served: Served::ByBeacon, errors: Dialect::Rest,
                handler: Handler::Router(beacon::router), grpc: &[], receipt: false,
                openapi: beacon_doc::round,
            },
            /// `/beacon/chains`: the chains served.
            BeaconChains {
                label: "/beacon/chains", policy: None,
                paths: &["/beacon/chains"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Public, limits: Limits::PeerWaiting, served: Served::ByBeacon, errors: Dialect::Rest,
                handler: Handler::Router(beacon::router), grpc: &[], receipt: false,
                openapi: beacon_doc::chains,
            },
            /// `/beacon/health`: the round served and the round due.
            BeaconHealth {
                label: "/beacon/health", policy: None,
                paths: &["/beacon/health", "/beacon/{chain}/health"], methods: &[Verb::Get, Verb::Head],
                identity: Identity::Public, limits: Limits::PeerWaiting, served: Served::ByBeacon, errors: Dialect::Rest,
                handler: Handler::Router(beacon::router), grpc: &[], receipt: false,
                openapi: beacon_doc::health,
            },
        }
    };
}
pub(crate) use endpoint_table;

/// What this module reads of the table: each row's name, label and policy route.
macro_rules! names {
    ($(
        $(#[$doc:meta])*
        $name:ident {
            label: $label:literal,
            policy: $policy:expr,
            $($column:ident: $value:expr),* $(,)?
        }
    ),* $(,)?) => {
        /// An endpoint of the API: a row of the registry (`http/registry.rs` reads the rest of
        /// it: paths, guard, handler, gRPC methods, OpenAPI operation).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Endpoint {
            $($(#[$doc])* $name,)*
        }

        /// Every endpoint's label, in the table's order (`Endpoint as usize` indexes it): the
        /// bounded set of `route` label values, with `unmatched`.
        pub const ROUTES: &[&str] = &[$($label),*];

        /// Every endpoint's policy route, in the table's order.
        const POLICIES: &[Option<Route>] = &[$($policy),*];

        impl Endpoint {
            /// Every endpoint, in the table's order.
            pub const ALL: [Endpoint; ROUTES.len()] = [$(Endpoint::$name),*];
        }
    };
}
endpoint_table!(names);

impl Endpoint {
    /// The endpoint at `index` of [`ROUTES`].
    pub fn at(index: usize) -> Option<Endpoint> {
        Endpoint::ALL.get(index).copied()
    }

    /// Its label in metrics and log lines: its entry in [`ROUTES`].
    pub fn label(self) -> &'static str {
        ROUTES[self as usize]
    }
}

/// A policy route: what a caller's policy allows (`routes = ["/bits", ...]`), for the endpoints
/// whose row names it (Vault's two paths share one) and the gRPC methods in those rows. Its
/// name in the configuration is the label of its first row ([`Route::path`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `/bits`, `GetBits`, `StreamBits`.
    Bits,
    /// `/bytes`, `GetBytes`.
    Bytes,
    /// `/token`, `GetToken`.
    Token,
    /// `/nonce`, `GetNonce`.
    Nonce,
    /// `/uuid`, `GetUuids`.
    Uuid,
    /// `/int`, `GetInts`.
    Int,
    /// `POST /pollen`: the Pollen protocol's seed for a booting VM (with `[pollen] enabled`).
    Pollen,
    /// Vault's `sys/tools/random` and `transit/random` (with `[vault] enabled`).
    Vault,
    /// AWS KMS `GenerateRandom` (with `[kms] enabled`).
    Kms,
}

impl Route {
    /// Every route (bit `route as u16` of a set of routes).
    pub const ALL: [Route; 9] = [
        Route::Bits,
        Route::Bytes,
        Route::Token,
        Route::Nonce,
        Route::Uuid,
        Route::Int,
        Route::Pollen,
        Route::Vault,
        Route::Kms,
    ];

    /// The route's name in the configuration: the label of the first endpoint that names it
    /// (its HTTP path; `kms` for the KMS front-end).
    pub fn path(self) -> &'static str {
        NAMES[self as usize]
    }

    /// The route of an HTTP path, if it is a random-output one.
    pub fn from_path(path: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.path() == path)
    }

    /// The route's bit in a set of routes.
    pub fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

// A set of routes is a `u16`: a seventeenth route needs a wider one.
const _: () = assert!(Route::ALL.len() <= 16);

/// Each route's name, at `route as usize`: the label of the first endpoint whose policy it is.
/// Computed at compile time, which fails for a route that no endpoint names, or one missing
/// from [`Route::ALL`] or out of its order.
const NAMES: [&str; Route::ALL.len()] = {
    let mut names = [""; Route::ALL.len()];
    // Backwards, so that the first row naming a route is the one left.
    let mut i = POLICIES.len();
    while i > 0 {
        i -= 1;
        if let Some(route) = POLICIES[i] {
            names[route as usize] = ROUTES[i];
        }
    }
    let mut r = 0;
    while r < names.len() {
        assert!(Route::ALL[r] as usize == r, "Route::ALL lists the routes in their order");
        assert!(!names[r].is_empty(), "every policy route is some endpoint's");
        r += 1;
    }
    names
};

/// Written as its name (the configuration's `routes = ["/bits", ...]`).
impl Serialize for Route {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.path())
    }
}

/// Read from its name; any other string is refused as serde refuses an unknown variant
/// ("unknown variant `x`, expected one of `/bits`, ...").
impl<'de> Deserialize<'de> for Route {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Route::from_path(&name).ok_or_else(|| <D::Error as serde::de::Error>::unknown_variant(&name, &NAMES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_is_named_by_its_first_endpoint() {
        let names = [
            "/bits",
            "/bytes",
            "/token",
            "/nonce",
            "/uuid",
            "/int",
            "/pollen",
            "/v1/sys/tools/random",
            "kms",
        ];
        for (route, name) in Route::ALL.into_iter().zip(names) {
            assert_eq!(route.path(), name);
            assert_eq!(Route::from_path(name), Some(route));
            assert_eq!(serde_json::to_value(route).unwrap(), name, "its name in the configuration");
            assert_eq!(serde_json::from_value::<Route>(name.into()).unwrap(), route);
        }
        assert_eq!(Route::from_path("/v1/transit/random"), None, "Vault's second path is no name");
        let error = serde_json::from_value::<Route>("/usage".into()).unwrap_err().to_string();
        assert!(error.starts_with("unknown variant `/usage`, expected one of `/bits`, `/bytes`"), "{error}");
    }

    #[test]
    fn endpoints_are_the_rows_of_the_table() {
        assert_eq!(Endpoint::ALL.len(), ROUTES.len());
        assert_eq!(POLICIES.len(), ROUTES.len());
        for (i, e) in Endpoint::ALL.into_iter().enumerate() {
            assert_eq!(e as usize, i);
            assert_eq!(Endpoint::at(i), Some(e));
            assert_eq!(e.label(), ROUTES[i]);
        }
        assert_eq!(Endpoint::at(ROUTES.len()), None);
        let mut labels = ROUTES.to_vec();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), ROUTES.len(), "labels are unique");
    }
}
