//! The policy routes: what a caller's policy allows (`routes = ["/bits", ...]` in the
//! configuration), written here, below everything that reads a policy. Each is the name of the
//! endpoints (and gRPC methods) that a row of the API's table guards with it (`http.rs`); the
//! table's test checks that every route guards some row and that the first row it guards
//! carries its name as its label.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A policy route (its bit in a set of routes is `route as u16`).
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
    /// `/sequence`, `GetSequence`.
    Sequence,
    /// `POST /pollen`: the Pollen protocol's seed for a booting VM (with `[pollen] enabled`).
    Pollen,
    /// Vault's `sys/tools/random` and `transit/random` (with `[vault] enabled`).
    Vault,
    /// AWS KMS `GenerateRandom` (with `[kms] enabled`).
    Kms,
    /// `/tickets` (create, list, reveal) and `/results` (with `[tickets] enabled`).
    Tickets,
    /// RANDOM.ORG's JSON-RPC API (with `[randomorg] enabled`).
    RandomOrg,
}

impl Route {
    /// Every route, in their order.
    pub const ALL: [Route; 12] = [
        Route::Bits,
        Route::Bytes,
        Route::Token,
        Route::Nonce,
        Route::Uuid,
        Route::Int,
        Route::Sequence,
        Route::Pollen,
        Route::Vault,
        Route::Kms,
        Route::Tickets,
        Route::RandomOrg,
    ];

    /// The route's name in the configuration: the path of its first endpoint (`kms` for the
    /// KMS front-end, whose path is everyone's `/`).
    pub const fn name(self) -> &'static str {
        match self {
            Route::Bits => "/bits",
            Route::Bytes => "/bytes",
            Route::Token => "/token",
            Route::Nonce => "/nonce",
            Route::Uuid => "/uuid",
            Route::Int => "/int",
            Route::Sequence => "/sequence",
            Route::Pollen => "/pollen",
            Route::Vault => "/v1/sys/tools/random",
            Route::Kms => "kms",
            Route::Tickets => "/tickets",
            Route::RandomOrg => "/json-rpc/4/invoke",
        }
    }

    /// The route named `name`, if any.
    pub fn named(name: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether a draw on it may use a ticket (`[tickets]`): the routes whose output may be
    /// shown to others (a ticket's result can be), not a token's or a nonce's, which are secrets.
    pub fn takes_tickets(self) -> bool {
        matches!(self, Route::Bits | Route::Bytes | Route::Uuid | Route::Int | Route::Sequence)
    }

    /// The route's bit in a set of routes.
    pub fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

// A set of routes is a `u16`: a seventeenth route needs a wider one.
const _: () = assert!(Route::ALL.len() <= 16);
// `Route::ALL` lists every route in its order.
const _: () = {
    let mut r = 0;
    while r < Route::ALL.len() {
        assert!(Route::ALL[r] as usize == r);
        r += 1;
    }
};

/// Written as its name (the configuration's `routes = ["/bits", ...]`).
impl Serialize for Route {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Read from its name; any other string is refused as serde refuses an unknown variant
/// ("unknown variant `x`, expected one of `/bits`, ...").
impl<'de> Deserialize<'de> for Route {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const NAMES: [&str; Route::ALL.len()] = {
            let mut names = [""; Route::ALL.len()];
            let mut r = 0;
            while r < names.len() {
                names[r] = Route::ALL[r].name();
                r += 1;
            }
            names
        };
        let name = String::deserialize(deserializer)?;
        Route::named(&name).ok_or_else(|| <D::Error as serde::de::Error>::unknown_variant(&name, &NAMES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_read_and_written_by_name() {
        for route in Route::ALL {
            assert_eq!(Route::named(route.name()), Some(route));
            assert_eq!(serde_json::to_value(route).unwrap(), route.name(), "its name in the configuration");
            assert_eq!(serde_json::from_value::<Route>(route.name().into()).unwrap(), route);
        }
        assert_eq!(Route::named("/v1/transit/random"), None, "Vault's second path is no name");
        let error = serde_json::from_value::<Route>("/usage".into()).unwrap_err().to_string();
        assert!(error.starts_with("unknown variant `/usage`, expected one of `/bits`, `/bytes`"), "{error}");
    }
}
