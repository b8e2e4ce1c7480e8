//! `GET /beacon/...`: drand's HTTP API, as its relays serve it, over the beacon (with
//! `[beacon] enabled`; docs/verifiable.md):
//!
//! | path | answer | `Cache-Control` |
//! |---|---|---|
//! | `/beacon/info` | the chain's parameters ([`crate::beacon::Chain::info_json`]) | `public, max-age=300` |
//! | `/beacon/{chainhash}/info` | the same, the chain named | `public, max-age=604800, immutable` |
//! | `/beacon/public/latest` | the latest round | `public, max-age=<seconds until the next round>` |
//! | `/beacon/public/{round}` | round `round` (0: the latest), once due | `public, max-age=604800, immutable` |
//! | `/beacon/health` | `{"current", "expected"}`: with drbgd's key both the clock's round (it never lags); following a network the latest verified and the clock's, 503 when behind by more than one | `no-store` |
//! | `/beacon/chains` | `["<chain hash>"]` | `no-store` |
//!
//! and every path but `/chains` under `/beacon/{chainhash}/` too, 404 for another chain's
//! hash. The round after the current one is waited for (up to a period, within
//! `server.request_timeout_ms`) while a waiter's place is free, in all and for the request's
//! peer; else, and for one further ahead or any before genesis, 425 Too Early with
//! `Retry-After`. An uncached old round waits a moment for its turn to be signed (or fetched,
//! following a network), then is 503; following a network, nothing is served before its chain
//! is known and its rounds verified (503 `beacon_unavailable`).
//! Every answer of these handlers, errors too, has `Access-Control-Allow-Origin: *` (and exposes
//! `Retry-After`); the shared pipeline's own refusals (429, 503) do not. The query string is ignored
//! (drand-client adds `?<ms>` to defeat caches). Public routes: no credentials, the per-peer
//! limits of public requests (`pipeline/admit.rs`). A round's body is the same bytes on every
//! replica holding the key, or following the same network (rendered as its nodes render it).
//!
//! `/info` without the chain's hash in its path may name another chain after a key rotation
//! (a new chain), so it is kept five minutes, not a week.

use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;

use crate::beacon::{Beacon, Refusal, UnixTime};
use crate::callers::peer::PeerKey;
use crate::error::ApiError;
use crate::pipeline::{self, Answer, Report};
use crate::state::AppState;

/// A past round's (and a named chain's info): a week, as drand's relays, and never revalidated.
const IMMUTABLE: &str = "public, max-age=604800, immutable";

/// `/info` without the chain's hash: five minutes (a key rotation makes a new chain).
const UNPINNED_INFO: &str = "public, max-age=300";

/// Time kept between the end of a wait for the next round and the request's deadline, so that
/// the round is signed and written before the pipeline's timeout answers 503 instead.
const WAIT_MARGIN: Duration = Duration::from_millis(250);

/// How late after its due time a waited-for round is asked for again: the wall clock the
/// beacon reads must have passed it too (a timer may fire a hair early against it).
const WAKE_LATE: Duration = Duration::from_millis(2);

/// The longest `Retry-After` sent: a day (a round due later, or past `u64`'s range of seconds,
/// is retried no sooner than that).
const MAX_RETRY_AFTER: u64 = 86_400;

/// What a beacon path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource<'a> {
    /// `/info`.
    Info,
    /// `/health`.
    Health,
    /// `/chains` (only without a chain hash).
    Chains,
    /// `/public/latest`.
    Latest,
    /// `/public/{round}`, the segment as sent.
    Round(&'a str),
}

/// A beacon path: the chain hash segment, if any, and the resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeaconPath<'a> {
    /// The `{chainhash}` segment, as sent.
    pub chain: Option<&'a str>,
    /// What is asked for.
    pub resource: Resource<'a>,
}

/// A path under `/beacon/` read as the router matches its routes (the table's paths): the
/// static forms first (`/beacon/public/info` is round `info`, a 400), then a chain hash
/// segment before them (any non-empty segment; the handler answers 404 for another chain's).
pub fn parse(path: &str) -> Option<BeaconPath<'_>> {
    let rest = path.strip_prefix("/beacon/")?;
    if let Some(resource) = resource(rest) {
        return Some(BeaconPath { chain: None, resource });
    }
    let (chain, rest) = rest.split_once('/')?;
    match resource(rest)? {
        _ if chain.is_empty() => None,
        Resource::Chains => None,
        resource => Some(BeaconPath { chain: Some(chain), resource }),
    }
}

fn resource(rest: &str) -> Option<Resource<'_>> {
    Some(match rest {
        "info" => Resource::Info,
        "health" => Resource::Health,
        "chains" => Resource::Chains,
        "public/latest" => Resource::Latest,
        _ => {
            let round = rest.strip_prefix("public/")?;
            if round.is_empty() || round.contains('/') {
                return None;
            }
            Resource::Round(round)
        }
    })
}

/// The method router of every beacon path: drand's API, a GET (and HEAD); the query string is
/// ignored.
pub fn router() -> MethodRouter<AppState> {
    axum::routing::get(get)
}

/// The handler of every beacon route (the path says which; the query is not read). Its
/// extractors are the URI and the peer's key the pipeline put on the request: the
/// request's body, and with it the request's place under the public cap and its peer's
/// in-flight count (`pipeline/admit.rs`), is dropped before it runs, so that requests waiting for
/// the next round never hold the places health checks need; they have bounds of their own
/// ([`crate::beacon::MAX_WAITERS`] in all, [`crate::beacon::MAX_WAITERS_PER_PEER`] per peer),
/// and each peer's request rate still applies. Without a key (no pipeline), all requests
/// count as one peer's.
pub async fn get(State(state): State<AppState>, peer: Option<Extension<PeerKey>>, uri: Uri) -> Response {
    let peer = peer.map_or_else(|| PeerKey::of(None), |Extension(key)| key);
    let mut answer = answer(&state, peer, uri.path()).await.unwrap_or_else(Answer::from);
    // drand's relays send it on every answer, so that drand-client in a browser reads errors too.
    let headers = answer.response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    // So that a browser's script may read when to ask again (a 425's or a 503's).
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("Retry-After"));
    answer.into_response()
}

async fn answer(state: &AppState, peer: PeerKey, path: &str) -> Result<Answer, ApiError> {
    let beacon = state.beacon.as_deref().ok_or(ApiError::NotFound)?;
    let BeaconPath { chain: named, resource } = parse(path).ok_or(ApiError::NotFound)?;
    // Following a network whose upstreams have not answered yet: nothing to serve.
    let chain = beacon.chain().ok_or_else(|| refused(Refusal::Unavailable, 0))?;
    if named.is_some_and(|c| !chain.is_named_by(c)) {
        return Err(ApiError::NotFound);
    }
    match resource {
        Resource::Info => {
            let cache = if named.is_some() { IMMUTABLE } else { UNPINNED_INFO };
            Ok(json(chain.info_json().clone(), Some(HeaderValue::from_static(cache))))
        }
        Resource::Chains => {
            let body = format!("[\"{}\"]", chain.hash_hex());
            Ok(json(body.into(), None))
        }
        Resource::Health => {
            let health = beacon.health(now()).ok_or_else(|| refused(Refusal::Unavailable, 0))?;
            let body = format!("{{\"current\":{},\"expected\":{}}}", health.current, health.expected);
            let mut answer = json(body.into(), None);
            if !health.healthy() {
                // drand's relays: 503 while the latest round served is behind the clock's
                // by more than one.
                *answer.response.status_mut() = axum::http::StatusCode::SERVICE_UNAVAILABLE;
            }
            Ok(answer)
        }
        Resource::Latest => latest(beacon),
        Resource::Round(text) => match round_number(text)? {
            // drand's relays read round 0 as the latest.
            0 => latest(beacon),
            round => signed_round(state, beacon, peer, round).await,
        },
    }
}

/// The wall clock as the beacon reads it.
fn now() -> UnixTime {
    crate::beacon::wall_clock()
}

/// A round number: decimal digits only (as drand's `strconv.ParseUint`), within `u64`.
fn round_number(text: &str) -> Result<u64, ApiError> {
    let invalid =
        || ApiError::invalid("invalid_round", "round", "the round must be a decimal number below 2^64");
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    text.parse().map_err(|_| invalid())
}

/// The latest round, kept by caches until the next is due (whole seconds, rounded down, so
/// that no cache serves it as the latest once the next is out).
fn latest(beacon: &Beacon) -> Result<Answer, ApiError> {
    let (signed, next_in) = beacon.latest(now()).map_err(|r| refused(r, 0))?;
    let cache = HeaderValue::from_str(&format!("public, max-age={}", next_in.as_secs()))
        .unwrap_or_else(|_| HeaderValue::from_static("no-store"));
    Ok(json(signed.json.clone(), Some(cache)))
}

/// Round `round` once due: the next one waited for while its due time falls within the
/// request's deadline, and a waiter's place is free (else 425, to retry once it is due).
async fn signed_round(
    state: &AppState,
    beacon: &Beacon,
    peer: PeerKey,
    round: u64,
) -> Result<Answer, ApiError> {
    let budget = Duration::from_millis(state.settings.server.request_timeout_ms).saturating_sub(WAIT_MARGIN);
    let start = tokio::time::Instant::now();
    let mut waiter = None;
    loop {
        let wait = match beacon.signed_in_turn(round, now()).await {
            Ok(signed) => return Ok(json(signed.json.clone(), Some(HeaderValue::from_static(IMMUTABLE)))),
            Err(Refusal::NotDue { wait, next: true }) if start.elapsed().saturating_add(wait) <= budget => {
                wait
            }
            // Following a network, a round waited for that did not come while it was the
            // clock's current one (the network behind, or halted) is still the waiter's 425: it
            // may come yet. (Not one the follower has passed: that one is past, and 503.)
            Err(Refusal::Unavailable)
                if waiter.is_some() && beacon.latest_verified().is_none_or(|l| l.round < round) =>
            {
                return Err(ApiError::TooEarly {
                    retry_after: 1,
                    detail: format!(
                        "round {round} is not out yet as far as drbgd can verify (the network it follows is behind)"
                    ),
                });
            }
            Err(refusal) => return Err(refused(refusal, round)),
        };
        if waiter.is_none() {
            waiter = Some(beacon.waiter(peer).ok_or_else(|| waiters_full(wait, round))?);
        }
        tokio::time::sleep(wait.saturating_add(WAKE_LATE)).await;
    }
}

/// The error of a refusal.
fn refused(refusal: Refusal, round: u64) -> ApiError {
    match refusal {
        Refusal::NotDue { wait, .. } => {
            let secs = retry_secs(wait);
            let what = if round == 0 {
                "no round is due yet (before genesis)".to_string()
            } else {
                format!("round {round} is not due yet (only the next round is waited for)")
            };
            ApiError::TooEarly { retry_after: secs, detail: format!("{what}: due in {secs} s") }
        }
        Refusal::Busy => ApiError::Overloaded,
        Refusal::NoRound => ApiError::invalid("invalid_round", "round", "a chain has no round 0"),
        Refusal::Unavailable => ApiError::BeaconUnavailable,
    }
}

/// The refusal of a request for the next round, due in `wait`, when no waiter's place is free.
fn waiters_full(wait: Duration, round: u64) -> ApiError {
    let secs = retry_secs(wait);
    let detail =
        format!("round {round} is due in {secs} s; too many requests (this address's, or all) wait for it");
    ApiError::TooEarly { retry_after: secs, detail }
}

/// `Retry-After` for a round due in `wait`: whole seconds, rounded up (at least one, so that a
/// retry finds it due), at most [`MAX_RETRY_AFTER`].
pub(crate) fn retry_secs(wait: Duration) -> u64 {
    wait.as_secs().saturating_add(u64::from(wait.subsec_nanos() > 0)).clamp(1, MAX_RETRY_AFTER)
}

/// A JSON answer with `cache_control` (`None`: the pipeline's `no-store`; [`get`] adds
/// `Access-Control-Allow-Origin`).
fn json(body: bytes::Bytes, cache_control: Option<HeaderValue>) -> Answer {
    let response = pipeline::response_with(axum::body::Body::from(body), "application/json", 1);
    Answer { response, report: Report { cache_control, ..Report::default() } }
}

/// The OpenAPI operations of the beacon's routes (drand's HTTP API, public as `/keys` and `/verify` are: no security requirement): each row's `doc` column (`http.rs`), built from the
/// pieces of `http/openapi/describe.rs`.
pub(crate) mod doc {
    use crate::pipeline::Describe;
    use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    use utoipa::openapi::{Components, PathItem, Required, ResponseBuilder};

    use crate::http::openapi::describe::{content, peer_limited, problem};

    fn hex(description: &str) -> ObjectBuilder {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^[0-9a-f]+$"))
            .description(Some(description))
    }

    fn integer(description: &str) -> ObjectBuilder {
        ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)).description(Some(description))
    }

    fn round_schema() -> ObjectBuilder {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("round", integer("The round number"))
            .property("randomness", hex("SHA-256 of the signature (32 bytes)"))
            .property(
                "signature",
                hex("BLS signature: on G1 of SHA-256(round as u64 big-endian), 48 bytes (bls-unchained-g1-rfc9380); \
                     on G2 of SHA-256(previous signature || round), 96 bytes (pedersen-bls-chained, a followed network)"),
            )
            .property("previous_signature", hex("The previous round's signature: pedersen-bls-chained only"))
            .required("round")
            .required("randomness")
            .required("signature")
    }

    fn info_schema() -> ObjectBuilder {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("public_key", hex("The chain's public key: compressed G2 (96 bytes), or G1 (48) on pedersen-bls-chained"))
            .property("period", integer("Seconds between rounds"))
            .property("genesis_time", integer("Unix seconds at which round 1 is due"))
            .property("hash", hex("The chain hash, as drand computes it"))
            .property("groupHash", hex("drbgd's key: SHA-256 of the public key (it has no group); a followed network: its group's hash"))
            .property(
                "schemeID",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["bls-unchained-g1-rfc9380", "pedersen-bls-chained"])),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_as_drands_relay_routes_them() {
        let hash = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971";
        let at = |chain, resource| Some(BeaconPath { chain, resource });
        assert_eq!(parse("/beacon/info"), at(None, Resource::Info));
        assert_eq!(parse("/beacon/health"), at(None, Resource::Health));
        assert_eq!(parse("/beacon/chains"), at(None, Resource::Chains));
        assert_eq!(parse("/beacon/public/latest"), at(None, Resource::Latest));
        assert_eq!(parse("/beacon/public/42"), at(None, Resource::Round("42")));
        let prefixed = format!("/beacon/{hash}/public/42");
        assert_eq!(parse(&prefixed), at(Some(hash), Resource::Round("42")));
        let prefixed = format!("/beacon/{hash}/info");
        assert_eq!(parse(&prefixed), at(Some(hash), Resource::Info));
        let prefixed = format!("/beacon/{hash}/public/latest");
        assert_eq!(parse(&prefixed), at(Some(hash), Resource::Latest));
        for none in
            ["/beacon", "/beacon/", "/beacon/x/chains", "/beacon/public/", "/beacon/public/1/2", "/bits"]
        {
            assert_eq!(parse(none), None, "{none}");
        }
    }

    #[test]
    fn rounds_are_decimal_digits_within_u64() {
        assert_eq!(round_number("0").unwrap(), 0);
        assert_eq!(round_number("18446744073709551615").unwrap(), u64::MAX);
        for bad in ["", "+1", "-1", "1e3", "0x10", "18446744073709551616", " 1", "latest"] {
            assert_eq!(round_number(bad).unwrap_err().code(), "invalid_round", "{bad:?}");
        }
    }

    #[test]
    fn refusals_say_when_to_retry() {
        let early = refused(Refusal::NotDue { wait: Duration::from_millis(4500), next: false }, 9);
        assert_eq!((early.status().as_u16(), early.code(), early.retry_after()), (425, "too_early", Some(5)));
        let soon = refused(Refusal::NotDue { wait: Duration::from_millis(1), next: true }, 9);
        assert_eq!(soon.retry_after(), Some(1));
        let far = refused(Refusal::NotDue { wait: Duration::MAX, next: false }, u64::MAX);
        assert_eq!(far.retry_after(), Some(MAX_RETRY_AFTER));
        assert_eq!(refused(Refusal::Busy, 9).code(), "overloaded");
        // No waiter's place: retry once the round is due, not at once.
        let full = waiters_full(Duration::from_millis(2500), 9);
        assert_eq!((full.status().as_u16(), full.code(), full.retry_after()), (425, "too_early", Some(3)));
        assert_eq!(waiters_full(Duration::ZERO, 9).retry_after(), Some(1));
    }
}
