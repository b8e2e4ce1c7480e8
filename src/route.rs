//! The API's routes as names, below everything that needs them: the random-output routes a
//! caller's policy allows ([`Route`]) and the REST route templates that label metrics and log
//! lines ([`ROUTES`]; the KMS front-end's label is `kms`, its path `/` being everyone's; the
//! beacon's routes under `/beacon/{chainhash}/` are labelled as the same routes without it). The
//! endpoints themselves (guards, handlers, gRPC methods) are the HTTP
//! module's endpoint table.

use serde::{Deserialize, Serialize};

/// Every REST route template, in the order of the HTTP module's endpoint table (also the
/// bounded set of `route` label values, with `unmatched`).
pub const ROUTES: &[&str] = &[
    "/bits",
    "/bytes",
    "/token",
    "/nonce",
    "/uuid",
    "/int",
    "/pollen",
    "/v1/sys/tools/random",
    "kms",
    "/algorithms",
    "/usage",
    "/openapi.json",
    "/v1/transit/random",
    "/keys",
    "/verify",
    "/beacon/info",
    "/beacon/public/latest",
    "/beacon/public/{round}",
    "/beacon/chains",
    "/beacon/health",
];

/// A random-output endpoint (HTTP route and the gRPC methods that serve the same thing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
pub enum Route {
    /// `/bits`, `GetBits`, `StreamBits`.
    #[serde(rename = "/bits")]
    Bits,
    /// `/bytes`, `GetBytes`.
    #[serde(rename = "/bytes")]
    Bytes,
    /// `/token`, `GetToken`.
    #[serde(rename = "/token")]
    Token,
    /// `/nonce`, `GetNonce`.
    #[serde(rename = "/nonce")]
    Nonce,
    /// `/uuid`, `GetUuids`.
    #[serde(rename = "/uuid")]
    Uuid,
    /// `/int`, `GetInts`.
    #[serde(rename = "/int")]
    Int,
    /// `POST /pollen`: the Pollen protocol's seed for a booting VM (with `[pollen] enabled`).
    #[serde(rename = "/pollen")]
    Pollen,
    /// Vault's `sys/tools/random` and `transit/random` (with `[vault] enabled`).
    #[serde(rename = "/v1/sys/tools/random")]
    Vault,
    /// AWS KMS `GenerateRandom` (with `[kms] enabled`).
    #[serde(rename = "kms")]
    Kms,
}

impl Route {
    /// Every route.
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

    /// The route's name: its HTTP path (`kms` for the KMS front-end), its entry in [`ROUTES`], which lists the random-output routes
    /// first, in this enum's order.
    pub fn path(self) -> &'static str {
        ROUTES[self as usize]
    }

    /// The route of an HTTP path, if it is a random-output one.
    pub fn from_path(path: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.path() == path)
    }

    /// The route's bit in a set of routes.
    pub fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// Whether it is a drop-in front-end's, served only when its section enables it.
    pub fn drop_in(self) -> bool {
        matches!(self, Route::Pollen | Route::Vault | Route::Kms)
    }
}

// A set of routes is a `u16`: a seventeenth route needs a wider one.
const _: () = assert!(Route::ALL.len() <= 16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_is_its_entry_in_the_route_list() {
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
        }
    }
}
