//! `/token`, `/nonce`, `/uuid`, `/int` (GET, and POST with a JSON body): small values for
//! everyday use, as plain text (one per line) or JSON when the client asks for it, or with
//! `receipt=true` a signed receipt of them. Parse into a typed request, call the service,
//! encode.

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::receipt;
use super::respond::{self, served};
use crate::callers::Admission;
use crate::error::ApiError;
use crate::pipeline::params::{self, Accept, Param, Params, wants_json};
use crate::pipeline::{self, Answer};
use crate::receipts::Random;
use crate::service::{IntRequest, Secret, SecretFormat, SecretKind, SecretRequest, UuidRequest};
use crate::state::AppState;

/// `/token?bytes=32&format=base64url|hex|base32|base64&alg=&receipt=&user_data=`.
pub fn token(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    secret(SecretKind::Token, state, admission, accept, params)
}

/// `/nonce?bytes=12&format=hex|base64|base64url|base32&alg=&receipt=&user_data=`.
pub fn nonce(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    secret(SecretKind::Nonce, state, admission, accept, params)
}

/// A token or a nonce (`kind`), or its receipt; inlined into each, whose kind is then a
/// constant (as when they were written apart: measured with `scripts/http-instructions.sh`).
#[inline(always)]
fn secret(
    kind: SecretKind,
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    params.allow(params::SECRET)?;
    // A ticket reaches here only in a GET's query (a POST's goes to the ticketed draw, which
    // refuses it with the ticket looked up): refused as the endpoint's, not as a GET's.
    if params.get(Param::Ticket).is_some() {
        return Err(super::tickets::calls::ticket_not_allowed());
    }
    let ask = receipt::ask(state, params)?;
    let (bytes, format, alg) = (params.u64(Param::Bytes)?, secret_format(params)?, params.get(Param::Alg));
    let req =
        SecretRequest::new(state.service.rules(), kind, bytes, format, alg)?.with_receipt(ask.is_some());
    if let Some(ask) = &ask {
        ask.check_size(req.bytes())?;
    }
    let secret = state.service.secret(&admission.caller, &req)?;
    match ask {
        Some(ask) => {
            let bits = secret.bytes * 8;
            receipt::respond(state, admission, &ask, Random::secret(&secret), secret.alg, bits)
        }
        None => Ok(secret_response(accept, secret)),
    }
}

fn secret_format(params: &Params) -> Result<Option<SecretFormat>, ApiError> {
    params
        .get(Param::Format)
        .map(|name| {
            SecretFormat::parse(name).ok_or_else(|| {
                let names: Vec<&str> = SecretFormat::ALL.iter().map(|f| f.name()).collect();
                ApiError::invalid(
                    "unknown_format",
                    "format",
                    format!("format must be one of {}", names.join(", ")),
                )
            })
        })
        .transpose()
}

fn secret_response(accept: Accept<'_>, mut secret: Secret) -> Answer {
    let (alg, bits) = (secret.alg, secret.bytes * 8);
    let body = if wants_json(accept) {
        let Secret { value, bytes, format, alg, .. } = secret;
        let json = SecretJson { value: &value, bytes, format: format.name(), alg: alg.name() };
        // Written into a buffer sized for all of it up front, so that no grown-out-of copy of
        // the value is left behind unwiped. Serializing to memory fails only if a `Display`
        // does, which none of these does.
        let mut body = Vec::with_capacity(value.len() + 96);
        let _ = serde_json::to_writer(&mut body, &json);
        pipeline::response(respond::wiped(body), "application/json")
    } else {
        // The value's own buffer moves into the body (no copy; an empty String is left).
        let value = std::mem::take(&mut *secret.value).into_bytes();
        pipeline::response(respond::wiped(value), respond::TEXT)
    };
    served(body, alg, bits)
}

/// A secret as JSON, borrowing its value (no copy left unwiped).
#[derive(serde::Serialize)]
struct SecretJson<'a> {
    value: &'a str,
    bytes: u64,
    format: &'static str,
    alg: &'static str,
}

/// `/uuid?count=1&version=4|7&alg=&receipt=&user_data=`.
pub fn uuid(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    params.allow(params::UUID)?;
    let ask = receipt::ask(state, params)?;
    let (count, version) = (params.u64(Param::Count)?, params.u64(Param::Version)?);
    let req = UuidRequest::new(state.service.rules(), count, version, params.get(Param::Alg))?
        .with_receipt(ask.is_some());
    if let Some(ask) = &ask {
        ask.check_size(req.count() as u64 * 16)?;
    }
    let out = state.service.uuids(&admission.caller, req)?;
    let bits = out.uuids.len() as u64 * 122;
    if let Some(ask) = ask {
        return receipt::respond(state, admission, &ask, Random::uuids(&out), out.alg, bits);
    }
    let body = if wants_json(accept) {
        let list: Vec<String> = out.uuids.iter().map(ToString::to_string).collect();
        Json(json!({ "uuids": list, "version": out.version, "alg": out.alg.name() })).into_response()
    } else {
        lines(out.uuids.iter().map(ToString::to_string))
    };
    Ok(served(body, out.alg, bits))
}

/// `/int?min=&max=&count=&alg=&receipt=&user_data=`: uniform integers in `[min, max]`.
pub fn int(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<Answer, ApiError> {
    params.allow(params::INT)?;
    let ask = receipt::ask(state, params)?;
    let (min, max, count) = (params.i64(Param::Min)?, params.i64(Param::Max)?, params.u64(Param::Count)?);
    let req = IntRequest::new(state.service.rules(), min, max, count, params.get(Param::Alg))?
        .with_receipt(ask.is_some());
    if let Some(ask) = &ask {
        ask.check_size(req.count() as u64 * 8)?;
    }
    let out = state.service.ints(&admission.caller, req)?;
    if let Some(ask) = ask {
        return receipt::respond(state, admission, &ask, Random::ints(&out), out.alg, 0);
    }
    let body = if wants_json(accept) {
        Json(json!({ "values": out.values, "min": out.min, "max": out.max, "alg": out.alg.name() }))
            .into_response()
    } else {
        lines(out.values.iter().map(ToString::to_string))
    };
    Ok(served(body, out.alg, 0))
}

fn lines(items: impl Iterator<Item = String>) -> Response {
    let mut text = String::new();
    for item in items {
        text.push_str(&item);
        text.push('\n');
    }
    text.into_response()
}

/// The OpenAPI operations of `/token`, `/nonce`, `/uuid` and `/int`: each row's `doc` column (`http.rs`), built from the
/// pieces of `http/openapi/describe.rs`.
pub(crate) mod doc {
    use crate::pipeline::Describe;
    use utoipa::openapi::path::OperationBuilder;

    use utoipa::openapi::{Components, PathItem};

    use crate::http::openapi::describe::Context;
    use crate::http::openapi::describe::{RANDOM_ERRORS, get_and_post};
    use crate::pipeline::params::{self, Param};
    use crate::service::SecretFormat;
    use crate::service::request::{
        DEFAULT_NONCE_BYTES, DEFAULT_NONCE_FORMAT, DEFAULT_TOKEN_BYTES, DEFAULT_TOKEN_FORMAT,
    };

    /// `/token`: GET and POST.
    pub(crate) fn token(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let context = secret(DEFAULT_TOKEN_BYTES, DEFAULT_TOKEN_FORMAT);
        values(d, "Token", "A token for sessions, API keys, CSRF", params::SECRET, &context, "SecretJson")
    }

    /// `/nonce`: GET and POST.
    pub(crate) fn nonce(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let context = secret(DEFAULT_NONCE_BYTES, DEFAULT_NONCE_FORMAT);
        let summary = "A nonce (12 bytes for AES-GCM/ChaCha20-Poly1305, 24 for XChaCha)";
        values(d, "Nonce", summary, params::SECRET, &context, "SecretJson")
    }

    /// `/uuid`: GET and POST.
    pub(crate) fn uuid(d: &Describe<'_>, _: &mut Components) -> PathItem {
        values(d, "Uuids", "RFC 9562 UUIDs", params::UUID, &Context::default(), "UuidsJson")
    }

    /// `/int`: GET and POST.
    pub(crate) fn int(d: &Describe<'_>, _: &mut Components) -> PathItem {
        let summary = "Uniform integers in [min, max] without modulo bias";
        values(d, "Ints", summary, params::INT, &Context::default(), "IntsJson")
    }

    /// The parameters' context of a secret (`/token`, `/nonce`): its default size and format.
    fn secret(default_bytes: u64, default_format: SecretFormat) -> Context {
        Context { secret: Some((default_bytes, default_format)), ..Context::default() }
    }

    /// A small-value route's GET and POST (`get{id}`, `post{id}`): the same parameters, `list`
    /// described for `context`, in the query or a JSON body; the values as text or as `schema`.
    fn values(
        d: &Describe<'_>,
        id: &str,
        summary: &str,
        list: &[Param],
        context: &Context,
        schema: &str,
    ) -> PathItem {
        let ok = |op: OperationBuilder| d.errors(op.response("200", d.text_or_json(schema)), RANDOM_ERRORS);
        let get = ok(d.op(&format!("get{id}"), summary).parameters(Some(d.query(list, context))));
        let post = ok(d
            .op(&format!("post{id}"), &format!("{summary}, parameters in a JSON body"))
            .request_body(Some(d.body(list, context))));
        get_and_post(d, get, post)
    }
}
