//! `GET /bits`, `POST /bits` and `GET /bytes`: random output in any encoding, streamed when
//! large.

use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::Value;

use super::params::{Params, choose_format};
use super::{X_DRBG_ALG, X_DRBG_BITS};
use crate::error::ApiError;
use crate::service::{self, BitsRequest, ChunkedOutput, Encoding};
use crate::state::AppState;

const FORMATS: &[Encoding] =
    &[Encoding::Hex, Encoding::Binary, Encoding::Base64, Encoding::Base64Url, Encoding::Bits, Encoding::Json];
const PARAMS: &[&str] = &["n", "alg", "format", "pr"];

/// `GET /bits?n=&alg=&format=&pr=`.
pub async fn get_bits(
    State(state): State<AppState>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    params.allow(PARAMS)?;
    let n =
        params.u64("n", "invalid_n")?.ok_or_else(|| ApiError::invalid("invalid_n", "n", "n is required"))?;
    let n = service::check_n("n", n, state.settings.limits.max_bits)?;
    respond(&state, &headers, &params, n)
}

/// `GET /bytes?n=&alg=&format=&pr=`: the same, counted in bytes.
pub async fn get_bytes(
    State(state): State<AppState>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    params.allow(PARAMS)?;
    let n =
        params.u64("n", "invalid_n")?.ok_or_else(|| ApiError::invalid("invalid_n", "n", "n is required"))?;
    let n = service::check_n("n", n, state.settings.limits.max_bits / 8)?;
    respond(&state, &headers, &params, n * 8)
}

/// `POST /bits` with `{"n": 256, "alg": "...", "format": "...", "pr": false}`.
pub async fn post_bits(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(|e| ApiError::invalid("invalid_body", "body", e.body_text()))?;
    let object = body
        .as_object()
        .ok_or_else(|| ApiError::invalid("invalid_body", "body", "the body must be a JSON object"))?;
    let mut pairs = Vec::new();
    for (key, value) in object {
        let text = match (key.as_str(), value) {
            ("n", Value::Number(n)) if n.is_u64() => n.to_string(),
            ("n", _) => return Err(ApiError::invalid("invalid_n", "n", "n must be a positive integer")),
            ("pr", Value::Bool(b)) => b.to_string(),
            ("pr", _) => return Err(ApiError::invalid("invalid_boolean", "pr", "pr must be true or false")),
            (_, Value::String(s)) => s.clone(),
            _ => return Err(ApiError::invalid("invalid_body", key, format!("{key} must be a string"))),
        };
        pairs.push((key.clone(), text));
    }
    let params = Params::from_pairs(pairs);
    params.allow(PARAMS)?;
    let n =
        params.u64("n", "invalid_n")?.ok_or_else(|| ApiError::invalid("invalid_n", "n", "n is required"))?;
    let n = service::check_n("n", n, state.settings.limits.max_bits)?;
    respond(&state, &headers, &params, n)
}

fn respond(
    state: &AppState,
    headers: &HeaderMap,
    params: &Params,
    n_bits: u64,
) -> Result<Response, ApiError> {
    let alg = service::resolve_alg(state, params.get("alg"))?;
    let encoding = choose_format(params.get("format"), headers, FORMATS)?;
    let req = BitsRequest { n_bits, alg, prediction_resistance: params.flag("pr")? };
    let mut response = if req.byte_len() > state.settings.limits.stream_threshold_bytes as u64 {
        streamed(state, req, encoding)?
    } else {
        whole(state, &req, encoding)?
    };
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(encoding.content_type()));
    h.insert(X_DRBG_ALG, HeaderValue::from_static(alg.name()));
    h.insert(X_DRBG_BITS, HeaderValue::from(n_bits));
    Ok(response)
}

fn whole(state: &AppState, req: &BitsRequest, encoding: Encoding) -> Result<Response, ApiError> {
    let generated = service::generate(state, req)?;
    let start = Instant::now();
    let body = service::render(encoding, req, &generated);
    let encode_ms = start.elapsed().as_secs_f64() * 1e3;
    let timing = format!(
        "gen;dur={:.3};desc=\"generate\", enc;dur={:.3};desc=\"encode\"",
        generated.generate_time.as_secs_f64() * 1e3,
        encode_ms
    );
    let mut response = body.into_response();
    if let Ok(v) = HeaderValue::from_str(&timing) {
        response.headers_mut().insert("server-timing", v);
    }
    Ok(response)
}

/// A chunked body. The shard is prepared and the first chunk generated before the response
/// is returned, so a generator that refuses gives a clean 503, not a cut body.
fn streamed(state: &AppState, req: BitsRequest, encoding: Encoding) -> Result<Response, ApiError> {
    let mut chunks =
        ChunkedOutput::new(state.clone(), req, encoding, state.settings.limits.stream_chunk_bytes)?;
    let first = chunks.next_chunk()?;
    let rest = futures_util::stream::try_unfold(chunks, |mut chunks| async move {
        match chunks.next_chunk() {
            Ok(Some(bytes)) => Ok(Some((bytes, chunks))),
            Ok(None) => Ok(None),
            Err(e) => {
                tracing::warn!(code = e.code(), "aborting a streamed response: generator refused mid-stream");
                Err(std::io::Error::other(e.code()))
            }
        }
    });
    let stream = futures_util::stream::iter(first.map(Ok)).chain(rest);
    Ok(Body::from_stream(stream).into_response())
}
