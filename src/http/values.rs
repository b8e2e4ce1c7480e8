//! `/token`, `/nonce`, `/uuid`, `/int` (GET, and POST with a JSON body): small values for
//! everyday use, as plain text (one per line) or JSON when the client asks for it, or with
//! `receipt=true` a signed receipt of them. Parse into a typed request, call the service,
//! encode.

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::params::{self, Accept, Param, Params, wants_json};
use super::receipt;
use super::respond::{self, served};
use crate::callers::{Admission, Route};
use crate::error::ApiError;
use crate::pipeline::{self, RecordedResponse};
use crate::receipts::{Ask, Random};
use crate::service::{IntRequest, NonceRequest, Secret, SecretFormat, TokenRequest, UuidRequest};
use crate::state::AppState;

/// `/token?bytes=32&format=base64url|hex|base32|base64&alg=&receipt=&user_data=`.
pub fn token(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<RecordedResponse, ApiError> {
    params.allow(params::SECRET)?;
    let ask = receipt::ask(state, admission, params)?;
    let req = TokenRequest::new(
        state.service.rules(),
        params.u64(Param::Bytes)?,
        secret_format(params)?,
        params.get(Param::Alg),
    )?;
    if let Some(ask) = &ask {
        ask.check_size(req.secret().bytes())?;
    }
    let secret = state.service.token(&admission.caller, req)?;
    match ask {
        Some(ask) => signed_secret(state, admission, &ask, Route::Token, &secret),
        None => Ok(secret_response(accept, secret)),
    }
}

/// `/nonce?bytes=12&format=hex|base64|base64url|base32&alg=&receipt=&user_data=`.
pub fn nonce(
    state: &AppState,
    admission: &Admission,
    accept: Accept<'_>,
    params: &Params<'_>,
) -> Result<RecordedResponse, ApiError> {
    params.allow(params::SECRET)?;
    let ask = receipt::ask(state, admission, params)?;
    let req = NonceRequest::new(
        state.service.rules(),
        params.u64(Param::Bytes)?,
        secret_format(params)?,
        params.get(Param::Alg),
    )?;
    if let Some(ask) = &ask {
        ask.check_size(req.secret().bytes())?;
    }
    let secret = state.service.nonce(&admission.caller, req)?;
    match ask {
        Some(ask) => signed_secret(state, admission, &ask, Route::Nonce, &secret),
        None => Ok(secret_response(accept, secret)),
    }
}

/// A token's or nonce's receipt.
fn signed_secret(
    state: &AppState,
    admission: &Admission,
    ask: &Ask,
    route: Route,
    secret: &Secret,
) -> Result<RecordedResponse, ApiError> {
    receipt::respond(state, admission, ask, Random::secret(route, secret), secret.alg, secret.bytes * 8)
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

fn secret_response(accept: Accept<'_>, mut secret: Secret) -> RecordedResponse {
    let (alg, bits) = (secret.alg, secret.bytes * 8);
    let body = if wants_json(accept) {
        let Secret { value, bytes, format, alg } = secret;
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
) -> Result<RecordedResponse, ApiError> {
    params.allow(params::UUID)?;
    let ask = receipt::ask(state, admission, params)?;
    let req = UuidRequest::new(
        state.service.rules(),
        params.u64(Param::Count)?,
        params.u64(Param::Version)?,
        params.get(Param::Alg),
    )?;
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
) -> Result<RecordedResponse, ApiError> {
    params.allow(params::INT)?;
    let ask = receipt::ask(state, admission, params)?;
    let req = IntRequest::new(
        state.service.rules(),
        params.i64(Param::Min)?,
        params.i64(Param::Max)?,
        params.u64(Param::Count)?,
        params.get(Param::Alg),
    )?;
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
