//! Signed receipts over HTTP: the `receipt` and `user_data` parameters of every random-output
//! endpoint, the signed answer (`{"random": {...}, "signature": "..."}`, `application/json`),
//! `GET /keys` (the verification keys as a JWK set) and `POST /verify` (checks a receipt). Both
//! of the latter are public: they hold no secret. What a receipt holds and how it is signed and
//! checked is [`crate::receipts`]'s.

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;

use super::respond::{served, wiped_joined};
use crate::callers::{Admission, Route};
use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::pipeline::params::{Accept, Param, Params};
use crate::pipeline::{self, Answer};
use crate::receipts::{Ask, Random};
use crate::service::BitsRequest;
use crate::state::AppState;

/// The receipt a request asks for (`receipt=true`, with its `user_data`), allowed by the
/// server's settings; `None`: a plain answer. The caller's policy is checked with the rest of
/// the draw, by the service ([`crate::callers::Policy::check`]).
///
/// # Errors
/// 400 `invalid_boolean`, `user_data_without_receipt`, `receipts_disabled`,
/// `user_data_too_large`.
pub fn ask(state: &AppState, params: &Params<'_>) -> Result<Option<Ask>, ApiError> {
    let receipt = params.flag(Param::Receipt)?;
    // A ticket is used by the draw that holds it (`http/tickets.rs`), which resolves it first:
    // one named in the request but not resolved came by GET (a draw that uses a ticket
    // changes what is stored, so it is a POST).
    if params.get(Param::Ticket).is_some() && params.stamp().is_none() {
        return Err(ApiError::invalid(
            "ticket_needs_post",
            "ticket",
            "a draw that uses a ticket is a POST, with the ticket in its JSON body",
        ));
    }
    state.receipts.ask(receipt, params.get(Param::UserData), params.stamp())
}

/// The `Accept` header bits are encoded by: none with a receipt, whose answer is JSON
/// whatever encoding its `data` has (hex unless `format` says otherwise).
pub fn accept<'a>(ask: Option<&Ask>, accept: Accept<'a>) -> Accept<'a> {
    if ask.is_some() { Accept::default() } else { accept }
}

/// The receipt of `/bits` or `/bytes` (`route`): the output generated in one piece (a receipt
/// is never streamed; its size is checked first), then signed.
///
/// # Errors
/// 400 `receipt_too_large`; the service's (policy, quota, generator); 503 when no serial
/// could be drawn.
pub fn bits(
    state: &AppState,
    admission: &Admission,
    ask: &Ask,
    route: Route,
    req: &BitsRequest,
) -> Result<Answer, ApiError> {
    ask.check_size(req.byte_len())?;
    let generated = state.service.whole(&admission.caller, req)?;
    let random = Random::bits(route, req, &generated.data);
    respond(state, admission, ask, random, req.alg(), req.n_bits())
}

/// The signed answer of `random`, which served `n_bits` from `alg`: `{"random": <the signed
/// canonical JSON, as it was signed>, "signature": "<base64url>"}`, in a body wiped once sent;
/// the receipt's serial recorded for the audit line.
///
/// # Errors
/// 503 when no serial could be drawn.
pub fn respond(
    state: &AppState,
    admission: &Admission,
    ask: &Ask,
    random: Random,
    alg: Algorithm,
    n_bits: u64,
) -> Result<Answer, ApiError> {
    let receipt = state.receipts.issue(&state.service, &admission.caller, ask, random)?;
    let body = wiped_joined(&[
        &b"{\"random\":"[..],
        receipt.json().as_bytes(),
        b",\"signature\":\"",
        receipt.signature().as_bytes(),
        b"\"}",
    ]);
    let mut answer = served(pipeline::response(body, "application/json"), alg, n_bits);
    answer.report.serial = Some(receipt.serial().to_owned());
    Ok(answer)
}

/// `GET /keys`: every receipt key in force as an RFC 8037 JWK set, the signing key first
/// (`{"keys": []}` with none).
pub fn keys(state: &AppState) -> Response {
    let set = crate::receipts::jwks::document(state.receipts.keys().public_keys());
    json(&set)
}

/// `/verify`'s method router: `POST` only (the router answers the rest 405 with `Allow`).
pub fn verify_router() -> MethodRouter<AppState> {
    axum::routing::post(verify)
}

/// `POST /verify` with a receipt as its body: 200 `{"valid": true, "key_id", "serial"}`, or
/// `{"valid": false, "reason", ...}` for a well-formed receipt that fails (`unknown_key`,
/// `malformed_signature`, `signature_mismatch`); 400 `invalid_receipt` for one that is not a
/// receipt (or is outside the shape of this server's receipts); 413 `body_too_large` over the
/// largest receipt this server issues; 503 `overloaded` when the checks' lane had no place in
/// time ([`crate::receipts::verify::Lane`]). Public: the body is read under the public body
/// deadline; its places under the public cap and its peer's limits are held until the check
/// is done.
pub async fn verify(State(state): State<AppState>, request: Request) -> Response {
    // With no key nothing verifies: a server that never turned receipts on reads at most a
    // small body for this public route (its verdict is `unknown_key`), not the largest receipt.
    let limit = if state.receipts.keys().public_keys().is_empty() {
        NO_KEYS_BODY_BYTES
    } else {
        state.receipts.max_receipt_bytes()
    };
    // The body is read through a borrow, not consumed: a public request's places (the public
    // cap's and its peer's) go with its body, so they are held until the check is done, and
    // the requests waiting for the checks' lane are as few as those places.
    let mut body = request.into_body();
    let read = http_body_util::BodyExt::collect(http_body_util::Limited::new(&mut body, limit)).await;
    let answer = match read.map_err(axum::Error::new) {
        Err(e) if super::body::too_large(&e) => Err(ApiError::BodyTooLarge { limit }),
        Err(e) => Err(super::body::body_error(&e, limit)),
        Ok(collected) => state
            .receipts
            .check(collected.to_bytes())
            .await
            .map(|verdict| Answer::from(json(&verdict.to_json()))),
    };
    drop(body);
    answer.unwrap_or_else(Answer::from).into_response()
}

/// Most bytes of a `POST /verify` body on a server without receipt keys.
const NO_KEYS_BODY_BYTES: usize = 16 * 1024;

/// `value` as an `application/json` response.
fn json(value: &serde_json::Value) -> Response {
    // Serializing a JSON tree to memory cannot fail.
    let body = serde_json::to_vec(value).unwrap_or_default();
    pipeline::response(body.into(), "application/json")
}

/// The OpenAPI operations of `/keys` and `/verify`: each row's `doc` column (`http.rs`), built from the
/// pieces of `http/openapi/describe.rs`.
pub(crate) mod doc {
    use crate::pipeline::Describe;
    use utoipa::openapi::path::{HttpMethod, OperationBuilder};
    use utoipa::openapi::request_body::RequestBodyBuilder;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    use utoipa::openapi::{Components, PathItem, Required};

    use crate::http::openapi::describe::{content, json_response, peer_limited, problem};

    /// `GET /keys`: public, like the contract.
    pub(crate) fn keys(_: &Describe<'_>, _: &mut Components) -> PathItem {
        let op = OperationBuilder::new()
            .operation_id(Some("getKeys"))
            .summary(Some(
                "The receipts' verification keys: an RFC 8037 JWK set, the signing key first (public, also with auth on)",
            ))
            .response("200", json_response("OK", "application/json", "Jwks"))
            .response("429", peer_limited())
            .response("503", problem("Service unavailable"));
        PathItem::new(HttpMethod::Get, op.build())
    }

    /// `POST /verify`: public, like the contract. The body's shape is what the server reads
    /// (`receipts::verify::receipt_shape`: three levels deep, 64 members an object): `random`'s
    /// members are scalars, lists of scalars or objects of scalars. (The bound on all the values
    /// together, lists' items included, is not a schema's to say; the body's size bounds it too.)
    pub(crate) fn verify(_: &Describe<'_>, _: &mut Components) -> PathItem {
        use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, OneOfBuilder, Schema, SchemaType};
        let scalar = || -> Schema {
            let types = SchemaType::from_iter([Type::String, Type::Number, Type::Boolean, Type::Null]);
            ObjectBuilder::new().schema_type(types).into()
        };
        let of_scalars = AdditionalProperties::RefOr(utoipa::openapi::RefOr::T(scalar()));
        let object_of_scalars = ObjectBuilder::new()
            .schema_type(Type::Object)
            .max_properties(Some(64))
            .additional_properties(Some(of_scalars));
        let member = OneOfBuilder::new()
            .item(scalar())
            .item(ArrayBuilder::new().items(utoipa::openapi::RefOr::T(scalar())))
            .item(object_of_scalars);
        let receipt = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "random",
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .max_properties(Some(64))
                    .additional_properties(Some(AdditionalProperties::RefOr(utoipa::openapi::RefOr::T(
                        member.into(),
                    ))))
                    .description(Some(
                        "The receipt's random object, as served (any member order and spacing): at most 64 \
                         members, each a string, number, boolean or null, or a list or object of them",
                    )),
            )
            .property(
                "signature",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("The Ed25519 signature, base64url without padding")),
            )
            .required("random")
            .required("signature")
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
        let op = OperationBuilder::new()
            .operation_id(Some("postVerify"))
            .summary(Some(
                "Checks a receipt against the keys in force: 200 with valid true, or false and the reason (public, also with auth on)",
            ))
            .request_body(Some(
                RequestBodyBuilder::new()
                    .required(Some(Required::True))
                    .content("application/json", content(receipt.into()))
                    .build(),
            ))
            .response("200", json_response("The verdict", "application/json", "Verdict"))
            .response("400", problem("Not a receipt (invalid_receipt), or a body that could not be read (invalid_body)"))
            .response("413", problem("Larger than any receipt this server issues (body_too_large)"))
            .response("429", peer_limited())
            .response("503", problem("Service unavailable"));
        PathItem::new(HttpMethod::Post, op.build())
    }
}
