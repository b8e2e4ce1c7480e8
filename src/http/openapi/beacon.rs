//! The beacon's entries in the OpenAPI document (with `[beacon] enabled`): drand's HTTP API,
//! public as `/keys` and `/verify` are (no security requirement, also with auth on; the
//! per-peer 429), its bodies drand's JSON. Each path is served under `/beacon/{chainhash}/`
//! too (but `/chains`), which the summaries say: the document lists each route once, as the
//! router's first path.

use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
use utoipa::openapi::{PathItem, PathsBuilder, Required, ResponseBuilder};

use super::{content, peer_limited, problem};

/// Where the beacon's paths start: all public.
pub const PREFIX: &str = "/beacon/";

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

/// `paths` with the beacon's (with `[beacon] enabled`).
pub fn add(mut paths: PathsBuilder) -> PathsBuilder {
    let round = ParameterBuilder::new()
        .name("round")
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some("The round; 0 is the latest"))
        .schema(Some(integer("")))
        .build();
    let too_early =
        problem("Further ahead than the next round, or before genesis (Retry-After: seconds until due)");
    let routes = [
        (
            "/beacon/info",
            op(
                "beaconInfo",
                "The chain's parameters, as drand's relays serve them (also /beacon/{chainhash}/info)",
                ok("The chain", info_schema().into()),
            ),
        ),
        (
            "/beacon/public/latest",
            op(
                "beaconLatest",
                "The latest round, kept by caches until the next is due (also under /beacon/{chainhash}/)",
                ok("The round", round_schema().into()),
            )
            .response("425", too_early.clone()),
        ),
        (
            "/beacon/public/{round}",
            op(
                "beaconRound",
                "A round once due; the next one is waited for (also under /beacon/{chainhash}/)",
                ok("The round, the same for ever (Cache-Control: immutable)", round_schema().into()),
            )
            .parameter(round)
            .response("400", problem("Not a round number (invalid_round)"))
            .response("425", too_early),
        ),
        (
            "/beacon/chains",
            op(
                "beaconChains",
                "The chains served: this one's hash",
                ok("Chain hashes", ArrayBuilder::new().items(hex("A chain hash")).into()),
            ),
        ),
        (
            "/beacon/health",
            op(
                "beaconHealth",
                "The round served and the round due (always the same here; also under /beacon/{chainhash}/)",
                ok(
                    "Current and expected rounds",
                    ObjectBuilder::new()
                        .schema_type(Type::Object)
                        .property("current", integer(""))
                        .property("expected", integer(""))
                        .into(),
                ),
            ),
        ),
    ];
    for (path, operation) in routes {
        debug_assert!(path.starts_with(PREFIX));
        paths = paths.path(path, PathItem::new(HttpMethod::Get, operation.build()));
    }
    paths
}
