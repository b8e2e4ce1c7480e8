//! The beacon's operations in the OpenAPI document (with `[beacon] enabled`; each registry
//! row's `openapi` column): drand's HTTP API, public as `/keys` and `/verify` are (no security
//! requirement, also with auth on; the per-peer 429), its bodies drand's JSON. Each path is
//! served under `/beacon/{chainhash}/` too (but `/chains`), which the summaries say: the
//! document lists each route once, as the router's first path.

use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
use utoipa::openapi::{Components, PathItem, Required, ResponseBuilder};

use super::describe::{Describe, content, peer_limited, problem};

fn hex(description: &str) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String).pattern(Some("^[0-9a-f]+$")).description(Some(description))
}

fn integer(description: &str) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)).description(Some(description))
}

fn round_schema() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("round", integer("The round number"))
        .property("randomness", hex("SHA-256 of the signature (32 bytes)"))
        .property("signature", hex("BLS signature on G1 of SHA-256(round as u64 big-endian), 48 bytes"))
        .required("round")
        .required("randomness")
        .required("signature")
}

fn info_schema() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("public_key", hex("The chain's public key, compressed G2 (96 bytes)"))
        .property("period", integer("Seconds between rounds"))
        .property("genesis_time", integer("Unix seconds at which round 1 is due"))
        .property("hash", hex("The chain hash, as drand computes it"))
        .property("groupHash", hex("SHA-256 of the public key (drbgd's convention: it has no group)"))
        .property(
            "schemeID",
            ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["bls-unchained-g1-rfc9380"])),
        )
        .property(
            "metadata",
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property("beaconID", ObjectBuilder::new().schema_type(Type::String)),
        )
}

fn ok(
    description: &str,
    schema: utoipa::openapi::RefOr<utoipa::openapi::Schema>,
) -> utoipa::openapi::Response {
    ResponseBuilder::new().description(description).content("application/json", content(schema)).build()
}

/// An operation with the errors every beacon route may answer: 404 (another chain's hash),
/// 429 (the per-peer limits of public routes) and 503.
fn op(id: &str, summary: &str, response: utoipa::openapi::Response) -> OperationBuilder {
    OperationBuilder::new()
        .operation_id(Some(id))
        .summary(Some(summary))
        .response("200", response)
        .response("404", problem("Another chain's hash in the path"))
        .response("429", peer_limited())
        .response("503", problem("Overloaded (Retry-After)"))
}

/// A GET of `operation`.
fn get(operation: OperationBuilder) -> PathItem {
    PathItem::new(HttpMethod::Get, operation.build())
}

/// 425: a round not due yet.
fn too_early() -> utoipa::openapi::Response {
    problem("Further ahead than the next round, or before genesis (Retry-After: seconds until due)")
}

/// `/beacon/info`.
pub(crate) fn info(_: &Describe<'_>, _: &mut Components) -> PathItem {
    get(op(
        "beaconInfo",
        "The chain's parameters, as drand's relays serve them (also /beacon/{chainhash}/info)",
        ok("The chain", info_schema().into()),
    ))
}

/// `/beacon/public/latest`.
pub(crate) fn latest(_: &Describe<'_>, _: &mut Components) -> PathItem {
    get(op(
        "beaconLatest",
        "The latest round, kept by caches until the next is due (also under /beacon/{chainhash}/)",
        ok("The round", round_schema().into()),
    )
    .response("425", too_early()))
}

/// `/beacon/public/{round}`.
pub(crate) fn round(_: &Describe<'_>, _: &mut Components) -> PathItem {
    let round = ParameterBuilder::new()
        .name("round")
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some("The round; 0 is the latest"))
        .schema(Some(integer("")))
        .build();
    get(op(
        "beaconRound",
        "A round once due; the next one is waited for (also under /beacon/{chainhash}/)",
        ok("The round, the same for ever (Cache-Control: immutable)", round_schema().into()),
    )
    .parameter(round)
    .response("400", problem("Not a round number (invalid_round)"))
    .response("425", too_early()))
}

/// `/beacon/chains`.
pub(crate) fn chains(_: &Describe<'_>, _: &mut Components) -> PathItem {
    get(op(
        "beaconChains",
        "The chains served: this one's hash",
        ok("Chain hashes", ArrayBuilder::new().items(hex("A chain hash")).into()),
    ))
}

/// `/beacon/health`.
pub(crate) fn health(_: &Describe<'_>, _: &mut Components) -> PathItem {
    let rounds = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("current", integer(""))
        .property("expected", integer(""));
    get(op(
        "beaconHealth",
        "The round served and the round due (always the same here; also under /beacon/{chainhash}/)",
        ok("Current and expected rounds", rounds.into()),
    ))
}
