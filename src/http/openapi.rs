//! The document `GET /openapi.json` serves (`http/meta.rs` answers it with the document
//! rendered once, at start-up), generated from the endpoint table: each row the
//! configuration serves is described by its own operation (its `doc` column, written beside
//! its handler), from the typed requests'
//! rules and the response types: the configured limits (`n`, `bytes`, `count` maxima), every
//! enabled algorithm with every alias it accepts, the formats of [`crate::service::Encoding`]
//! and [`crate::service::SecretFormat`], the receipt parameters and answer (when `[receipts]`
//! is on, on the rows that can answer one), the bearer security scheme on every operation that
//! needs it (when auth is on), and the problem+json error schema. The paths are each row's first; an API test
//! calls every documented operation and checks that nothing undocumented is routed.
//!
//! utoipa builds the document: its `ToSchema` derive describes the response structs the
//! handlers serialize (so the schema is the code), and its builder API takes the run-time
//! values (limits, enabled algorithms, auth) that attribute macros cannot.

pub(super) mod describe;

use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{
    Components, ComponentsBuilder, Info, InfoBuilder, OpenApi, OpenApiBuilder, PathItem, PathsBuilder,
};
use utoipa::{PartialSchema, ToSchema};

use self::describe::with_rate_limit_fields;
use crate::pipeline::{Availability, Credentials, Describe};
use crate::route::Route;
use crate::service::Rules;

/// An RFC 9457 problem: every error response of the API.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the problem type (`https://drbgd.invalid/problems/<code>`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The HTTP reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// The stable machine code (`invalid_n`, `entropy_unavailable`, ...).
    pub code: String,
    /// A human sentence.
    pub detail: String,
    /// The offending parameter, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
}

/// `format=json` for bits: the data in hex and the count of ones.
#[derive(Debug, Serialize, ToSchema)]
pub struct BitsJson {
    /// The generator.
    pub alg: String,
    /// Bits.
    pub n: u64,
    /// Always `hex`.
    pub encoding: String,
    /// `ceil(n/8)` bytes in lowercase hex.
    #[schema(pattern = "^[0-9a-f]*$")]
    pub data: String,
    /// Ones among the n bits.
    pub ones: u64,
}

/// A token or nonce as JSON (`Accept: application/json`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretJson {
    /// The encoded value.
    pub value: String,
    /// Random bytes it encodes.
    pub bytes: u64,
    /// Its encoding.
    pub format: String,
    /// The generator.
    pub alg: String,
}

/// UUIDs as JSON.
#[derive(Debug, Serialize, ToSchema)]
pub struct UuidsJson {
    /// The UUIDs.
    #[schema(inline, value_type = Vec<UuidString>)]
    pub uuids: Vec<String>,
    /// 4 or 7.
    pub version: u8,
    /// The generator.
    pub alg: String,
}

/// A hyphenated lowercase UUID.
#[derive(Debug, ToSchema)]
#[schema(value_type = String, format = "uuid")]
pub struct UuidString(pub String);

/// Integers as JSON.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntsJson {
    /// The values, each in `[min, max]`.
    pub values: Vec<i64>,
    /// The lower bound.
    pub min: i64,
    /// The upper bound.
    pub max: i64,
    /// The generator.
    pub alg: String,
}

/// A signed receipt (`receipt=true`, with `[receipts]` on): what was served, to whom and when,
/// and its signature. See `GET /keys`, `POST /verify` and docs/verifiable.md.
#[derive(Debug, Serialize, ToSchema)]
pub struct Receipt {
    /// The endpoint, its parameters (defaults applied), the output as `data` (a string, or a
    /// list of strings for `/uuid` and `/int`; binary output as base64, `data_encoding` saying
    /// so), `serial` (a UUIDv7), `issued_at` (RFC 3339, UTC, milliseconds), `caller`,
    /// `user_data` (if given) and `key_id`. Integers beyond ±(2^53 - 1) are strings. Its RFC 8785
    /// (JCS) canonical JSON, exactly as served, is what `signature` signs.
    #[schema(value_type = Object)]
    pub random: serde_json::Value,
    /// The Ed25519 signature of `random`'s canonical JSON, base64url without padding.
    pub signature: String,
}

/// The receipts' verification keys (`GET /keys`): an RFC 7517 JWK set.
#[derive(Debug, Serialize, ToSchema)]
pub struct Jwks {
    /// The keys in force, the signing key first.
    pub keys: Vec<Jwk>,
}

/// An Ed25519 public key as an RFC 8037 JWK.
#[derive(Debug, Serialize, ToSchema)]
pub struct Jwk {
    /// `OKP`.
    pub kty: String,
    /// `Ed25519`.
    pub crv: String,
    /// The raw 32-byte public key, base64url without padding.
    pub x: String,
    /// The key id: a receipt's `key_id`.
    pub kid: String,
    /// `sig`.
    #[serde(rename = "use")]
    pub usage: String,
    /// `EdDSA`.
    pub alg: String,
}

/// `POST /verify`'s answer for a well-formed receipt.
#[derive(Debug, Serialize, ToSchema)]
pub struct Verdict {
    /// Whether the signature verifies with the key `key_id` names.
    pub valid: bool,
    /// Why not: `unknown_key`, `malformed_signature`, `inexact_number` or `signature_mismatch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The receipt's `key_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The receipt's `serial`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
}

/// The document for `rules`: every row of the endpoint table the configuration serves (the drop-in
/// front-ends' for the routes `serves`, the beacon's when it is on), each described by its own
/// operation, with the bearer scheme applied when `auth` is on and the receipt parameters and
/// answers when receipts are served (`receipts`: the most output bytes one covers).
pub fn document(
    rules: &Rules,
    auth: bool,
    receipts: Option<u64>,
    beacon: bool,
    serves: impl Fn(Route) -> bool,
) -> OpenApi {
    let mut components = shared_components(auth);
    let mut paths = PathsBuilder::new();
    for row in super::ENDPOINTS {
        let documented = match row.availability {
            Availability::Always => true,
            Availability::Section => row.guard.route.is_some_and(&serves),
            Availability::Beacon => beacon,
            Availability::Tickets => serves(Route::Tickets),
            Availability::Door(route) => serves(route),
        };
        if !documented {
            continue;
        }
        // What this row's operations show: the bearer scheme where a bearer key names its
        // caller, the receipt where it can answer one.
        let describe = Describe {
            rules,
            auth: auth && matches!(row.guard.credentials, Credentials::Bearer),
            receipts: receipts.filter(|_| row.receipt),
            tickets: receipts.is_some()
                && serves(Route::Tickets)
                && row.guard.route.is_some_and(Route::takes_tickets),
        };
        let mut item = (row.doc)(&describe, &mut components);
        // A caller's answers carry its rate-limit fields, successes included.
        if !row.guard.public() {
            with_rate_limit_fields_on_ok(&mut item);
        }
        paths = paths.path(row.paths[0], item);
    }
    OpenApiBuilder::new().info(info(beacon)).paths(paths).components(Some(components)).build()
}

/// The schemas every configuration names, and the bearer scheme with auth on.
fn shared_components(auth: bool) -> Components {
    let mut components = ComponentsBuilder::new()
        .schema("Problem", Problem::schema())
        .schema("BitsJson", BitsJson::schema())
        .schema("SecretJson", SecretJson::schema())
        .schema("UuidsJson", UuidsJson::schema())
        .schema("IntsJson", IntsJson::schema())
        .schema("Receipt", Receipt::schema())
        .schema("Jwks", Jwks::schema())
        .schema("Jwk", Jwk::schema())
        .schema("Verdict", Verdict::schema())
        .schema("Usage", crate::callers::Usage::schema())
        .schema("PolicyUsage", crate::callers::PolicyUsage::schema())
        .schema("QuotaUsage", crate::callers::QuotaUsage::schema())
        .schema("BucketUsage", crate::callers::BucketUsage::schema())
        .schema("Counters", crate::callers::Counters::schema());
    if auth {
        let mut bearer = Http::new(HttpAuthScheme::Bearer);
        bearer.description = Some("An API key; the server stores only its SHA-256.".into());
        components = components.security_scheme("bearer", SecurityScheme::Http(bearer));
    }
    components.build()
}

/// The document's title, version and description.
fn info(beacon: bool) -> Info {
    InfoBuilder::new()
        .title("drbgd")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(if beacon {
            "Random bits, bytes, tokens, nonces, UUIDs and integers from sharded, fork-safe, self-testing DRBGs, and a drand-compatible randomness beacon (/beacon). Every response carries Cache-Control: no-store, except the beacon's rounds and chain info: public and the same for every client, they name their own. Limits and algorithms are this server's configuration."
        } else {
            "Random bits, bytes, tokens, nonces, UUIDs and integers from sharded, fork-safe, self-testing DRBGs. Every response carries Cache-Control: no-store. Limits and algorithms are this server's configuration."
        }))
        .build()
}

/// The rate-limit fields on the 200 of `item`'s GET and POST.
fn with_rate_limit_fields_on_ok(item: &mut PathItem) {
    for op in [&mut item.get, &mut item.post].into_iter().flatten() {
        if let Some(utoipa::openapi::RefOr::T(ok)) = op.responses.responses.get_mut("200") {
            *ok = with_rate_limit_fields(std::mem::take(ok));
        }
    }
}
