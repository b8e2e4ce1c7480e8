//! `GET /token`, `/nonce`, `/uuid`, `/int`: small values for everyday use, as plain text
//! (one per line) or JSON when the client asks for it.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::params::{Params, choose_format, wants_json};
use super::{X_DRBG_ALG, X_DRBG_BITS};
use crate::drbg::Algorithm;
use crate::error::ApiError;
use crate::service::{self, Encoding};
use crate::state::AppState;

/// `GET /token?bytes=32&format=base64url|hex|base32&alg=`.
pub async fn token(
    State(state): State<AppState>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    params.allow(&["bytes", "format", "alg"])?;
    secret(&state, &headers, &params, 32, &service::SECRET_FORMATS)
}

/// `GET /nonce?bytes=12&format=hex|base64|base64url&alg=`.
pub async fn nonce(
    State(state): State<AppState>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    params.allow(&["bytes", "format", "alg"])?;
    let formats = [Encoding::Hex, Encoding::Base64, Encoding::Base64Url, Encoding::Base32];
    secret(&state, &headers, &params, 12, &formats)
}

fn secret(
    state: &AppState,
    headers: &HeaderMap,
    params: &Params,
    default_bytes: u64,
    formats: &[Encoding],
) -> Result<Response, ApiError> {
    let bytes = params.u64("bytes", "invalid_bytes")?.unwrap_or(default_bytes);
    let alg = service::resolve_alg(state, params.get("alg"))?;
    let format = choose_format(params.get("format"), &HeaderMap::new(), formats)?;
    let value = service::secret(state, alg, bytes, format)?;
    let body = if wants_json(headers) {
        Json(json!({ "value": value, "bytes": bytes, "format": format.name(), "alg": alg.name() }))
            .into_response()
    } else {
        value.into_response()
    };
    Ok(tag(body, alg, bytes * 8))
}

/// `GET /uuid?count=1&version=4|7&alg=`.
pub async fn uuid(
    State(state): State<AppState>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    params.allow(&["count", "version", "alg"])?;
    let count = count(&state, &params)?;
    let version = match params.get("version").unwrap_or("4") {
        "4" => 4,
        "7" => 7,
        _ => return Err(ApiError::invalid("invalid_version", "version", "version must be 4 or 7")),
    };
    let alg = service::resolve_alg(&state, params.get("alg"))?;
    let ids = service::uuids(&state, alg, count, version)?;
    let body = if wants_json(&headers) {
        let list: Vec<String> = ids.iter().map(ToString::to_string).collect();
        Json(json!({ "uuids": list, "version": version, "alg": alg.name() })).into_response()
    } else {
        lines(ids.iter().map(ToString::to_string))
    };
    Ok(tag(body, alg, count as u64 * 122))
}

/// `GET /int?min=&max=&count=&alg=`: uniform integers in `[min, max]`.
pub async fn int(
    State(state): State<AppState>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    params.allow(&["min", "max", "count", "alg"])?;
    let min =
        params.i64("min")?.ok_or_else(|| ApiError::invalid("invalid_integer", "min", "min is required"))?;
    let max =
        params.i64("max")?.ok_or_else(|| ApiError::invalid("invalid_integer", "max", "max is required"))?;
    let count = count(&state, &params)?;
    let alg = service::resolve_alg(&state, params.get("alg"))?;
    let values = service::ints(&state, alg, min, max, count)?;
    let body = if wants_json(&headers) {
        Json(json!({ "values": values, "min": min, "max": max, "alg": alg.name() })).into_response()
    } else {
        lines(values.iter().map(ToString::to_string))
    };
    Ok(tag(body, alg, 0))
}

fn count(state: &AppState, params: &Params) -> Result<usize, ApiError> {
    service::check_count(params.u64("count", "invalid_count")?.unwrap_or(1), state.settings.limits.max_count)
}

fn lines(items: impl Iterator<Item = String>) -> Response {
    let mut text = items.collect::<Vec<_>>().join("\n");
    text.push('\n');
    text.into_response()
}

fn tag(mut response: Response, alg: Algorithm, bits: u64) -> Response {
    let h = response.headers_mut();
    h.insert(X_DRBG_ALG, HeaderValue::from_static(alg.name()));
    if bits > 0 {
        h.insert(X_DRBG_BITS, HeaderValue::from(bits));
    }
    response
}
