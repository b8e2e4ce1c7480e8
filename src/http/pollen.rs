//! `POST /pollen`: the Pollen protocol, which Ubuntu's `pollinate` client speaks at first boot
//! to seed a VM's kernel pool (with `[pollen] enabled`). The client posts a form,
//! `challenge=<hex>`; the answer is two lines, as Canonical's Pollen server writes them
//! (`"%x\n%x\n"`): the lowercase hex SHA-512 of the challenge string exactly as sent (its
//! characters, not decoded from hex), which the client checks, and 64 bytes of fresh output in
//! hex, which it writes to its pool. The output is a 64-byte hex token of the caller's
//! (the service's token request): the same admission, policy (route `/pollen`), quota, metrics
//! and audit as every route.

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use sha2::{Digest, Sha512};

use super::respond::{self, served};
use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::{self, Answer};
use crate::service::{SecretFormat, SecretKind, SecretRequest};
use crate::state::AppState;

/// Bytes of output per answer, as Pollen serves.
pub const SEED_BYTES: u64 = 64;

/// The largest challenge accepted: pollinate sends a SHA-512 in hex (128 characters).
const MAX_CHALLENGE: usize = 1024;

/// The largest body read: `challenge=` and a challenge at most, form-encoded.
const MAX_BODY: usize = 4 * MAX_CHALLENGE;

/// Its method router: `POST` only (the router answers the rest 405 with `Allow`).
pub fn router() -> MethodRouter<AppState> {
    axum::routing::post(post)
}

/// The handler.
pub async fn post(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Some(admission) = parts.extensions.get::<Admission>().cloned() else {
        return Answer::from(ApiError::Internal).into_response();
    };
    let answer = match axum::body::to_bytes(body, MAX_BODY).await {
        Err(e) => Err(super::body::body_error(&e, MAX_BODY)),
        Ok(bytes) => challenge(&bytes).and_then(|challenge| answer(&state, &admission, &challenge)),
    };
    answer.unwrap_or_else(Answer::from).into_response()
}

/// The challenge of a form body, as Pollen's server reads it (`r.FormValue("challenge")`):
/// the `challenge` field form-decoded, other fields (pollinate's `tag`) ignored. Empty when
/// absent, and answered: Canonical's server answers 400 there, but pollinate's
/// `--no-challenge` posts no body, checks nothing, and its curl (no `-f`) would write a 400's
/// body into the kernel's pool as seed; fresh bytes are kinder. Refused: a repeated
/// challenge, one over [`MAX_CHALLENGE`] characters, or one that is not printable ASCII.
fn challenge(body: &[u8]) -> Result<String, ApiError> {
    let invalid = |why: &str| ApiError::invalid("invalid_challenge", "challenge", why.to_owned());
    let mut found = None;
    for (key, value) in form_urlencoded::parse(body) {
        if key == "challenge" && found.replace(value).is_some() {
            return Err(invalid("challenge is given more than once"));
        }
    }
    let challenge = found.unwrap_or_default();
    if challenge.len() > MAX_CHALLENGE {
        return Err(invalid(&format!("challenge must be at most {MAX_CHALLENGE} characters")));
    }
    if !challenge.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid("challenge must be printable ASCII"));
    }
    Ok(challenge.into_owned())
}

fn answer(state: &AppState, admission: &Admission, challenge: &str) -> Result<Answer, ApiError> {
    let rules = state.service.rules();
    let req = SecretRequest::new(rules, SecretKind::Token, Some(SEED_BYTES), Some(SecretFormat::Hex), None)?;
    let seed = state.service.secret(&admission.caller, &req)?;
    let proof = data_encoding::HEXLOWER.encode(&Sha512::digest(challenge.as_bytes()));
    let body = respond::wiped_joined(&[proof.as_bytes(), b"\n", seed.value.as_bytes(), b"\n"]);
    let response = pipeline::response(body, respond::TEXT);
    Ok(served(response, seed.alg, seed.bytes * 8))
}

/// The OpenAPI operations of `POST /pollen`: each row's `doc` column (`http.rs`), built from the
/// pieces of `http/openapi/describe.rs`.
pub(crate) mod doc {
    use crate::pipeline::Describe;
    use utoipa::openapi::path::HttpMethod;
    use utoipa::openapi::request_body::RequestBodyBuilder;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    use utoipa::openapi::{Components, PathItem, Required, ResponseBuilder};

    use crate::http::openapi::describe::content;

    use crate::http::openapi::describe::RANDOM_ERRORS;

    /// `POST /pollen`.
    pub(crate) fn pollen(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let op = d.errors(
            d.op("postPollen", "The Pollen protocol: a VM's boot seed (Ubuntu's pollinate)")
                .request_body(Some(
                    RequestBodyBuilder::new()
                        .content(
                            "application/x-www-form-urlencoded",
                            content(
                                ObjectBuilder::new()
                                    .schema_type(Type::Object)
                                    .property(
                                        "challenge",
                                        ObjectBuilder::new()
                                            .schema_type(Type::String)
                                            .min_length(Some(1))
                                            .max_length(Some(1024))
                                            .pattern(Some("^[!-~]+$"))
                                            .description(Some(
                                                "Any printable ASCII; pollinate sends a SHA-512 in hex",
                                            )),
                                    )
                                    .required("challenge")
                                    .additional_properties(Some(
                                        utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
                                    ))
                                    .into(),
                            ),
                        )
                        .required(Some(Required::True))
                        .build(),
                ))
                .response(
                    "200",
                    ResponseBuilder::new()
                        .description(
                            "Two lines: the hex SHA-512 of the challenge as sent, and 64 bytes of output in hex",
                        )
                        .content("text/plain", content(ObjectBuilder::new().schema_type(Type::String).into()))
                        .build(),
                ),
            RANDOM_ERRORS,
        );
        PathItem::new(HttpMethod::Post, op.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_one_form_field_as_sent() {
        let hex = "ab".repeat(64);
        assert_eq!(challenge(format!("challenge={hex}").as_bytes()).unwrap(), hex);
        // Form-decoded, not hex-decoded.
        assert_eq!(challenge(b"challenge=a%20b+c").unwrap_err().code(), "invalid_challenge");
        assert_eq!(challenge(b"challenge=abc%21").unwrap(), "abc!");
        // Absent or empty is the empty challenge (Canonical's server answers 400: see
        // `challenge`), other fields ignored.
        assert_eq!(challenge(b"").unwrap(), "");
        assert_eq!(challenge(b"challenge=").unwrap(), "");
        assert_eq!(challenge(b"tag=vm-1&challenge=ab").unwrap(), "ab");
        assert_eq!(challenge(b"challenge=a&challenge=b").unwrap_err().code(), "invalid_challenge");
        let long = format!("challenge={}", "a".repeat(MAX_CHALLENGE + 1));
        assert_eq!(challenge(long.as_bytes()).unwrap_err().code(), "invalid_challenge");
    }
}
